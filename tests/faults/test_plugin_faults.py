"""Hostile sources through ``pytest --toll``: each is an error item with one clean line, and
no secret reaches the terminal, the JSON, SARIF, Markdown or JUnit reports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.faults.hostile import TOKEN, http_server, run_toll
from tests.faults.test_http_faults import BEHAVIOURS


def test_secrets_never_reach_any_report(tmp_path: Path) -> None:
    # Only the dripping server is to hit its deadline; the others get one no load reaches.
    with http_server(BEHAVIOURS) as base:
        (tmp_path / "toll.yaml").write_text(
            textwrap.dedent(
                f"""\
                servers:
                  echo:
                    url: {base}/echo
                    headers: {{Authorization: "Bearer ${{MCP_TOKEN}}"}}
                    timeout: 60
                  newline:
                    url: {base}/echo
                    headers: {{Authorization: "Bearer ${{MCP_TOKEN_NL}}"}}
                    timeout: 60
                  dripping:
                    url: {base}/drip
                    headers: {{X-Api-Key: "${{MCP_TOKEN}}"}}
                    timeout: 2
                  endless:
                    command: [{sys.executable}, -c, "import time; time.sleep(60)"]
                    timeout: 1e300
                """
            )
        )
        reports = {
            "junit": tmp_path / "junit.xml",
            "json": tmp_path / "toll.json",
            "sarif": tmp_path / "toll.sarif",
            "markdown": tmp_path / "toll.md",
        }
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--toll",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:hypothesispytest",
                f"--junitxml={reports['junit']}",
                f"--toll-json={reports['json']}",
                f"--toll-sarif={reports['sarif']}",
                f"--toll-markdown={reports['markdown']}",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "MCP_TOKEN": TOKEN, "MCP_TOKEN_NL": TOKEN + "\n"},
            timeout=60,
        )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    assert "4 failed" in output, output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert "forbidden: [secret] at /echo" in output
    assert "header Authorization: its value contains a line break" in output
    assert "no answer to initialize within the 2s timeout" in output
    assert "timeout must be a positive number of seconds up to 86400, not 1e+300" in output
    for name, path in reports.items():
        assert TOKEN not in path.read_text(), name
    assert TOKEN not in output


def test_a_timeout_that_is_not_finite_is_a_usage_error_naming_the_line(tmp_path: Path) -> None:
    # .inf and .nan never reach a measurement: the ledger itself is refused (exit 4).
    for value in (".inf", ".nan"):
        (tmp_path / "toll.yaml").write_text(
            f"servers:\n  endless:\n    command: [python, -V]\n    timeout: {value}\n"
        )
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "--toll", "-p", "no:cacheprovider"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert completed.returncode == 4, completed.stdout + completed.stderr
        assert "toll.yaml:4: servers.endless.timeout: must be a finite number" in (
            completed.stdout + completed.stderr
        )


def test_an_unexpected_error_is_exit_2_with_one_scrubbed_line(tmp_path: Path) -> None:
    """The CLI's safety net: a crash is "could not judge", never exit 1 ("violation")."""
    boom = tmp_path / "boom_verb.py"
    boom.write_text(
        textwrap.dedent(
            f"""\
            import argparse

            def configure(parser: argparse.ArgumentParser) -> None:
                parser.add_argument("--env", action="append", default=[])

            def run(args: argparse.Namespace) -> int:
                from pytest_toll.core.secrets import remember
                remember({TOKEN!r})
                raise RuntimeError("the unexpected, carrying {TOKEN}\\nand a second line")
            """
        )
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); import pytest_toll.cli as cli; "
        "cli.VERBS.append(('boom', 'boom_verb', 'crashes')); sys.exit(cli.main())"
    )
    for debug, traceback_shown in (("0", False), ("1", True)):
        completed = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path), "boom"],
            capture_output=True,
            text=True,
            env={**os.environ, "TOLL_DEBUG": debug},
            timeout=30,
        )
        assert completed.returncode == 2
        last = completed.stderr.splitlines()[-1]
        assert last == (
            "toll: error: unexpected RuntimeError: the unexpected, carrying [secret]; "
            "nothing measured (TOLL_DEBUG=1 shows the traceback)"
        )
        assert ("Traceback" in completed.stderr) is traceback_shown
        assert TOKEN not in completed.stderr + completed.stdout


def test_a_weigh_json_report_is_scrubbed_too(tmp_path: Path) -> None:
    """A tool name that carries a configured secret is masked in the JSON report."""
    server = tmp_path / "server.py"
    server.write_text(
        textwrap.dedent(
            """\
            import json, os, sys
            for line in sys.stdin:
                message = json.loads(line)
                if "id" not in message:
                    continue
                if message["method"] == "initialize":
                    result = {"protocolVersion": "2025-06-18", "capabilities": {},
                              "serverInfo": {"name": "leaky"}}
                else:
                    name = "leak_" + os.environ["API_TOKEN"]
                    result = {"tools": [{"name": name, "inputSchema": {"type": "object"},
                                         "description": "Leaks."}]}
                print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}),
                      flush=True)
            """
        )
    )
    outcome = run_toll(
        "weigh", "--json", "--env", f"API_TOKEN={TOKEN}", "--", sys.executable, str(server)
    )
    assert outcome.code in (0, 1), outcome
    assert '"leak_[secret]"' in outcome.stdout
    assert TOKEN not in outcome.output
