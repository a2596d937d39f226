"""Secrets in the environment (issue #24, items 1 and 2): a stdio server started for
measurement gets no secret-like variable unless the ledger's ``env:`` passes it, and no value
of one, nor a 12-character piece of one, reaches the terminal or any file a run writes, even
where a message is cut (a clipped answer, the last bytes of stderr, a 200-character sample).

Real servers (small Python scripts) started by ``pytest --toll`` with every output on, and
by ``toll weigh``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

import pytest

from pytest_toll.core.secrets import MIN_FRAGMENT
from tests.plugin.inner import QUIET

#: The environment's secrets, under the names providers and people give them. None is given
#: to a server; each is printed by one (the server knows them some other way).
SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz",
    "OPENAI_API_KEY": "sk-proj-Mn8Bv7Cx6Zl5Kj4Hg3Fd2Sa1Qw0Er9Ty",
    "GITHUB_TOKEN": "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "HF_TOKEN": "hf_Pq9Rs8Tu7Vw6Xy5Za4Bc3De2Fg1Hi0Jk",
    "SERVICE_PASSWORD": "correct-horse-battery-staple-9",
    "GOOGLE_APPLICATION_CREDENTIALS": "/secret/place/gcp-sa-7f3e9d1c.json",
    # Given to the server on purpose, by the ledger's env: ${PASSED_TOKEN}.
    "PASSED_TOKEN": "pt-7c1e9a4b3d2f8e6a5b4c3d2e1f0a9b8c",
}
#: Provider variables whose names say nothing secret: kept from the server, not blanked.
PROVIDER_PLAIN = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/anthropic"}
#: An ordinary variable: inherited, and printed as it is.
PLAIN = {"TOLL_PLAIN_SETTING": "visible-plain-value"}

_PRELUDE = """\
import json, os, sys
VALUES = json.load(open({values!r}))
with open({seen!r}, "w") as seen:
    json.dump({{name: os.environ.get(name) for name in {names!r}}}, seen)
def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()
"""

# Fails the handshake: an answer with neither result nor error, whose JSON is clipped to 120
# characters through GITHUB_TOKEN; 4 KiB of stderr whose kept window starts 10 characters
# into ANTHROPIC_API_KEY, then every other secret, whole.
FAILING = """
sys.stdin.readline()
key = VALUES["ANTHROPIC_API_KEY"]
lines = [f"{name}={value}" for name, value in VALUES.items() if name != "ANTHROPIC_API_KEY"]
lines.append("plain: " + os.environ.get("TOLL_PLAIN_SETTING", "missing"))
rest = "\\n".join(lines) + "\\n"
fill = 4096 - (len(key) - 10) - len(rest) - 1
sys.stderr.write("early\\n" + key + "-" * fill + "\\n" + rest)
sys.stderr.flush()
send({"jsonrpc": "2.0", "id": 1, "weird": "x" * 62 + VALUES["GITHUB_TOKEN"] + " and more"})
sys.exit(1)
"""

# Answers: a tool named after OPENAI_API_KEY; a non-JSON stdout line whose 200-character
# sample ends inside SERVICE_PASSWORD (rule E116, an error finding, so the entry fails).
ANSWERING = """
while True:
    line = sys.stdin.readline()
    if not line:
        break
    request = json.loads(line)
    if "id" not in request:
        continue
    if request["method"] == "initialize":
        sys.stdout.write("z" * 190 + VALUES["SERVICE_PASSWORD"] + "\\n")
        result = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {},
                  "serverInfo": {"name": "leaky", "version": "1"}}
    elif request["method"] == "tools/list":
        result = {"tools": [{
            "name": "fetch_" + VALUES["OPENAI_API_KEY"],
            "description": "Fetch a page. Uses key " + VALUES["HF_TOKEN"],
            "inputSchema": {"type": "object"},
        }]}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
"""


def _server(folder: Path, name: str, body: str) -> tuple[Path, Path]:
    values = folder / "values.json"
    values.write_text(json.dumps(SECRETS))
    seen = folder / f"{name}.seen.json"
    names = [*SECRETS, *PROVIDER_PLAIN, *PLAIN]
    script = folder / f"{name}.py"
    prelude = _PRELUDE.format(values=str(values), seen=str(seen), names=names)
    script.write_text(prelude + textwrap.dedent(body))
    return script, seen


def _environment() -> dict[str, str]:
    return {**os.environ, **SECRETS, **PROVIDER_PLAIN, **PLAIN}


def _pieces(secret: str) -> Iterable[str]:
    return (secret[start : start + MIN_FRAGMENT] for start in range(len(secret) - 11))


def assert_no_secret(text: str, where: str) -> None:
    """No secret of the environment, nor a 12-character piece of one, in ``text``."""
    for name, secret in SECRETS.items():
        for piece in _pieces(secret):
            assert piece not in text, f"{where}: a piece of {name} ({piece!r}):\n{text}"


def assert_what_the_server_saw(seen: Path) -> None:
    environment = json.loads(seen.read_text())
    inherited = {name for name, value in environment.items() if value is not None}
    assert inherited == {"PASSED_TOKEN", "TOLL_PLAIN_SETTING"}, environment
    assert environment["PASSED_TOKEN"] == SECRETS["PASSED_TOKEN"]


def test_pytest_toll_with_every_output_leaks_no_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = pytester.path
    failing, failing_seen = _server(folder, "failing", FAILING)
    answering, answering_seen = _server(folder, "answering", ANSWERING)
    pytester.makefile(
        ".yaml",
        toll=f"""\
        servers:
          failing:
            command: [{sys.executable}, {failing}]
            env: {{PASSED_TOKEN: "${{PASSED_TOKEN}}"}}
            timeout: 20
          answering:
            command: [{sys.executable}, {answering}]
            env: {{PASSED_TOKEN: "${{PASSED_TOKEN}}"}}
            timeout: 20
        """,
    )
    for name, value in {**SECRETS, **PROVIDER_PLAIN, **PLAIN}.items():
        monkeypatch.setenv(name, value)
    summary = folder / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(folder))
    files = {
        "junit": folder / "junit.xml",
        "json": folder / "toll.json",
        "markdown": folder / "toll.md",
        "sarif": folder / "toll.sarif",
        "html": folder / "toll.html",
        "badge": folder / "badge.svg",
    }
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-rA",
        f"--junitxml={files.pop('junit')}",
        *(f"--toll-{name}={path}" for name, path in files.items()),
    )
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, output
    result.stdout.fnmatch_lines(["*2 failed*"])
    assert "Traceback" not in output and "INTERNALERROR" not in output
    # The failures are still said: what was cut, the clipped answer, the stderr tail.
    assert "answer to initialize has neither result nor error" in output
    assert "plain: visible-plain-value" in output
    assert "E116" in output
    assert_no_secret(output, "the terminal")
    written = [*files.values(), folder / "junit.xml", folder / "badge.json", summary]
    for path in written:
        assert path.is_file(), path
        assert_no_secret(path.read_text(encoding="utf-8"), path.name)
    assert_what_the_server_saw(failing_seen)
    assert_what_the_server_saw(answering_seen)


@pytest.mark.parametrize("name", ["failing", "answering"])
def test_toll_weigh_prints_no_secret(tmp_path: Path, name: str) -> None:
    script, seen = _server(tmp_path, name, FAILING if name == "failing" else ANSWERING)
    for extra in ([], ["--json"]):
        completed = subprocess.run(
            [sys.executable, "-m", "pytest_toll", "weigh", *extra, "--timeout", "20",
             "--env", "PASSED_TOKEN=${PASSED_TOKEN}", "--", sys.executable, str(script)],
            capture_output=True, text=True, env=_environment(), timeout=60, check=False,
        )  # fmt: skip
        output = completed.stdout + completed.stderr
        assert completed.returncode == (2 if name == "failing" else 1), output
        assert "Traceback" not in output
        assert_no_secret(output, f"toll weigh {' '.join(extra)}")
        assert_what_the_server_saw(seen)


def test_which_names_are_secret_and_which_stay_from_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_toll.core import secrets

    secret = [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "SSH_AUTH_SOCK",
        "GH_PAT",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "my_secret",
        "PRIVATE_PEM",
        "SESSION_COOKIE",
    ]
    plain = ["GIT_AUTHOR_NAME", "TOKENIZERS_PARALLELISM", "PATH", "HOME", "PATTERN", "LANG"]
    assert [name for name in secret if not secrets.is_secret_name(name)] == []
    assert [name for name in plain if secrets.is_secret_name(name)] == []
    kept = {
        **dict.fromkeys(secret, "x"),
        **dict.fromkeys(plain, "y"),
        "AWS_REGION": "z",
        "ANTHROPIC_BASE_URL": "u",
        "azure_openai_endpoint": "e",
    }
    assert set(secrets.inheritable_environment(kept)) == set(plain)  # fmt: skip
    # A variable set while the process runs is scrubbed from then on.
    secrets.forget_all()
    monkeypatch.setenv("LATE_API_KEY", "late-value-9f8e7d6c")
    monkeypatch.setenv("DATABASE_URL", "postgres://me:db-pass-4e5f6a@db.example/x")
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-sonnet-4-5-20250929")
    monkeypatch.setenv("USE_AUTH", "enabled")  # a setting under a secret-like name
    shown = secrets.scrub("late-value-9f8e7d6c db-pass-4e5f6a claude-sonnet-4-5-20250929 enabled")
    assert shown == "[secret] [secret] claude-sonnet-4-5-20250929 enabled"
    secrets.forget_all()
