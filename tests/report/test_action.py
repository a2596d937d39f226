"""The composite action and the workflow template: valid YAML whose commands exist and run."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from pytest_toll.report.outputs import OUTPUTS

ROOT = Path(__file__).resolve().parents[2]
ACTION_DIR = ROOT / ".github" / "actions" / "toll"
ACTION = ACTION_DIR / "action.yml"
TEMPLATE = ROOT / ".github" / "workflow-templates" / "toll.yml"
DEMO = ROOT / "examples" / "demo"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def evaluate(expression: str, inputs: Mapping[str, str]) -> str:
    """The few expressions the action uses: ``inputs.NAME``."""
    match = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)", expression)
    assert match, f"unsupported expression in action.yml: {expression}"
    return inputs[match.group(1)]


def substitute(text: str, inputs: Mapping[str, str]) -> str:
    return EXPRESSION.sub(lambda match: evaluate(match.group(1), inputs), text)


def condition(expression: str | None, inputs: Mapping[str, str]) -> bool:
    if expression is None:
        return True
    match = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+) (==|!=) '([^']*)'", expression.strip())
    assert match, f"unsupported condition in action.yml: {expression}"
    equal = inputs[match.group(1)] == match.group(3)
    return equal if match.group(2) == "==" else not equal


def run_action(
    inputs: Mapping[str, str], workspace: Path, extra_env: Mapping[str, str]
) -> list[subprocess.CompletedProcess[str]]:
    """Run the action's steps the way the runner does: ``bash --noprofile --norc -eo pipefail``,
    inputs through the step's env, ``GITHUB_ACTION_PATH`` set to the action's folder."""
    action = load(ACTION)
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    unknown = set(inputs) - set(values)
    assert not unknown, f"not inputs of the action: {unknown}"
    values.update(inputs)
    results = []
    for index, step in enumerate(action["runs"]["steps"]):
        if not condition(step.get("if"), values):
            continue
        script = workspace / f".step-{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = {
            # Nothing of a real CI run may leak in: no real step summary, no xdist worker state.
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_"))},
            **extra_env,
            "GITHUB_ACTION_PATH": str(ACTION_DIR),
            "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_TEMP": str(workspace / ".runner-temp"),
        }
        env.update(
            {key: substitute(str(value), values) for key, value in step.get("env", {}).items()}
        )
        directory = workspace / substitute(step.get("working-directory", "."), values)
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        results.append(result)
        if result.returncode != 0:
            break
    return results


@pytest.fixture
def recording_python(tmp_path: Path) -> tuple[Path, Path]:
    """An executable standing in for python that records its arguments, one per line."""
    log = tmp_path / "argv.txt"
    fake = tmp_path / "bin" / "fake-python"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{log}"\n', encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake, log


def test_action_is_a_composite_whose_expressions_name_declared_inputs() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    declared = set(action["inputs"])
    used = set()
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash"
        # Inputs reach scripts only through env: nothing is spliced into the script text.
        assert "${{" not in step["run"]
        text = yaml.safe_dump({k: v for k, v in step.items() if k != "run"})
        used |= {evaluate(m, {n: n for n in declared}) for m in EXPRESSION.findall(text)}
        used |= set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", step.get("if", "")))
    assert used == declared


def invocations(log: Path) -> list[list[str]]:
    """The recorded argument lists, one per run of the fake python (each starts with -m)."""
    runs: list[list[str]] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if line == "-m":
            runs.append([])
        runs[-1].append(line)
    return runs


def test_install_step_installs_this_repository(
    tmp_path: Path, recording_python: tuple[Path, Path]
) -> None:
    fake, log = recording_python
    results = run_action({"python": str(fake), "update": "true", "args": "-n 2"}, tmp_path, {})
    assert [result.returncode for result in results] == [0, 0]
    install, pytest_args, outputs = invocations(log)
    assert install[:5] == ["-m", "pip", "install", "--disable-pip-version-check", "-q"]
    assert Path(install[5]).resolve() == ROOT
    assert install[6:] == ["pytest-xdist"]  # args use -n
    assert 'name = "pytest-toll"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    reports = tmp_path / ".runner-temp" / "pytest-toll"
    assert pytest_args == [
        "-m", "pytest", "--toll", "--toll-update", f"--toll-json={reports}/toll.json",
        f"--toll-markdown={reports}/toll.md", "-n", "2",
    ]  # fmt: skip
    assert outputs == [
        "-m", "pytest_toll", "github", "outputs", "--exit-code", "0",
        "--report", f"{reports}/toll.json", "--ledger", "toll.yaml",
        "--json", f"{reports}/toll.json", "--markdown", f"{reports}/toll.md",
    ]  # fmt: skip


def test_install_none_skips_and_a_requirement_goes_to_pip(
    tmp_path: Path, recording_python: tuple[Path, Path]
) -> None:
    fake, log = recording_python
    run_action({"python": str(fake), "install": "none"}, tmp_path, {})
    assert [run[:3] for run in invocations(log)] == [
        ["-m", "pytest", "--toll"],
        ["-m", "pytest_toll", "github"],
    ]
    log.unlink()
    run_action({"python": str(fake), "install": "pytest-toll==0.1.0 pytest-xdist"}, tmp_path, {})
    assert log.read_text(encoding="utf-8").split()[:7] == [
        "-m", "pip", "install", "--disable-pip-version-check", "-q",
        "pytest-toll==0.1.0", "pytest-xdist",
    ]  # fmt: skip


def test_report_inputs_and_arguments_are_passed_without_globbing_or_injection(
    tmp_path: Path, recording_python: tuple[Path, Path]
) -> None:
    fake, log = recording_python
    (tmp_path / "abc").write_text("")  # would match the glob a* if it were expanded
    run_action(
        {
            "python": str(fake),
            "install": "none",
            "args": "-k a* -p no:cacheprovider",
            "markdown": "out/toll report.md",
            "badge": "out/badge.svg",
            "sarif": "$(touch injected).sarif",
        },
        tmp_path,
        {},
    )
    reports = tmp_path / ".runner-temp" / "pytest-toll"
    assert invocations(log)[0] == [
        "-m",
        "pytest",
        "--toll",
        "--toll-badge=out/badge.svg",
        f"--toll-json={reports}/toll.json",
        "--toll-markdown=out/toll report.md",
        "--toll-sarif=$(touch injected).sarif",
        "-k",
        "a*",
        "-p",
        "no:cacheprovider",
    ]
    assert not (tmp_path / "injected").exists()


def test_every_output_of_the_table_is_an_input_and_an_output_of_the_action() -> None:
    """The action's gate step knows no output by name: each row of the outputs table is
    declared (an input, its TOLL_OUTPUT_<NAME> twin, an action output) and the script loops
    over those variables. The JSON report is always written, to a path of the action's own."""
    action = load(ACTION)
    gate = next(step for step in action["runs"]["steps"] if step.get("id") == "gate")
    for name in OUTPUTS:
        assert action["outputs"][name]["value"] == f"${{{{ steps.gate.outputs.{name} }}}}"
        assert f"--toll-{name}" not in gate["run"], name
        if name == "json":
            continue
        assert name in action["inputs"], name
        assert gate["env"][f"TOLL_OUTPUT_{name.upper()}"] == f"${{{{ inputs.{name} }}}}"
    declared = {key for key in gate["env"] if key.startswith("TOLL_OUTPUT_")}
    assert declared == {f"TOLL_OUTPUT_{name.upper()}" for name in OUTPUTS if name != "json"}


def test_workflow_template_gate_and_ratchet() -> None:
    workflow = load(TEMPLATE)
    # PyYAML reads the bare key `on` as True.
    triggers = workflow.get("on", cast(dict[Any, Any], workflow).get(True))
    assert isinstance(triggers, dict)
    assert set(triggers) == {"pull_request", "push"}
    assert workflow["permissions"] == {"contents": "read"}
    gate, ratchet = workflow["jobs"]["gate"], workflow["jobs"]["ratchet"]
    assert gate["if"] == "github.event_name == 'pull_request'"
    assert ratchet["if"] == "github.event_name == 'push'"
    # The gate may comment on the pull request; nothing else.
    assert gate["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert ratchet["permissions"] == {"contents": "write", "pull-requests": "write"}
    for job in (gate, ratchet):
        assert job["concurrency"]["group"]
        uses = [step["uses"] for step in job["steps"] if "uses" in step]
        toll_steps = [
            step for step in job["steps"] if ".github/actions/toll@" in step.get("uses", "")
        ]
        assert len(toll_steps) == 1, uses
        path = toll_steps[0]["uses"].split("/", 2)[2].split("@")[0]
        assert (ROOT / path / "action.yml").exists()
        assert set(toll_steps[0].get("with", {})) <= set(load(ACTION)["inputs"])
    assert [s["with"]["update"] for s in ratchet["steps"] if "toll@" in s.get("uses", "")] == [
        "true"
    ]
    # The action itself proposes or retires the ratchet pull request and publishes the badge.
    last = ratchet["steps"][-1]["with"]
    assert (last["ratchet"], last["badge-branch"]) == ("true", "toll-badge")
    assert "GITHUB_TOKEN" in TEMPLATE.read_text(encoding="utf-8")  # the caveats are documented


def test_workflow_template_scripts_are_valid_bash() -> None:
    workflow = load(TEMPLATE)
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                script = EXPRESSION.sub("x", step["run"])
                subprocess.run(["bash", "-n", "-c", script], check=True)
    for step in load(ACTION)["runs"]["steps"]:
        subprocess.run(["bash", "-n", "-c", step["run"]], check=True)


def test_the_action_gates_the_demo_for_real(tmp_path: Path) -> None:
    """The action's steps, unchanged, on a copy of the demo with this interpreter."""
    workspace = tmp_path / "workspace"
    shutil.copytree(DEMO, workspace / "demo", ignore=shutil.ignore_patterns("__pycache__"))
    summary = tmp_path / "step-summary.md"
    reports = tmp_path / "reports"
    results = run_action(
        {
            "python": sys.executable,
            "install": "none",
            "working-directory": "demo",
            "args": "-p no:cacheprovider",
            "markdown": str(reports / "toll.md"),
            "badge": str(reports / "badge.svg"),
            "sarif": str(reports / "toll.sarif"),
        },
        workspace,
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(summary),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        },
    )
    assert len(results) == 1  # install: none skipped the install step
    assert results[0].returncode == 0, results[0].stdout + results[0].stderr
    out = results[0].stdout
    assert "::error" not in out
    # The demo's one warning: the notes server's delete_note is paid and never called (E131).
    warnings = [line for line in out.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1 and "transcripts E131::mcp__notes__delete_note" in warnings[0], out
    assert re.search(r"^\d+ entries: \d+ passed \(\d+ ok\)$", out, re.MULTILINE), out
    assert re.search(r"ok\s+servers::notes\s+488\s+488\s+800\s+0\s+o200k", out), out
    markdown = summary.read_text(encoding="utf-8")
    assert markdown.startswith("## pytest-toll: context cost\n\n✅ **Gate passed** · ")
    assert "| ✅ ok | servers::notes | 488 | 488 | 800 | 0 | o200k |\n" in markdown
    assert (reports / "toll.md").read_text(encoding="utf-8") == markdown
    assert "923 tok (o200k)" in (reports / "badge.svg").read_text(encoding="utf-8")
    assert (reports / "badge.json").read_text(encoding="utf-8") == (
        '{\n  "schemaVersion": 1,\n  "label": "context cost",\n'
        '  "message": "923 tok (o200k)",\n  "color": "brightgreen"\n}\n'
    )
    sarif = json.loads((reports / "toll.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    assert [(result["ruleId"], result["level"]) for result in sarif["runs"][0]["results"]] == [
        ("E131", "warning")
    ]


def test_project_ci_runs_the_action_on_the_demo() -> None:
    workflow = load(ROOT / ".github" / "workflows" / "tests.yml")
    steps = workflow["jobs"]["demo-gate"]["steps"]
    toll = [step for step in steps if step.get("uses") == "./.github/actions/toll"]
    assert len(toll) == 1
    assert toll[0]["with"]["working-directory"] == "examples/demo"
    assert (ROOT / toll[0]["with"]["working-directory"] / "toll.yaml").exists()
    assert set(toll[0]["with"]) <= set(load(ACTION)["inputs"])


def test_ledger_only_runs_toll_gate_with_the_same_options(
    tmp_path: Path, recording_python: tuple[Path, Path]
) -> None:
    """#36 item 5: `ledger-only: "true"` runs `toll gate LEDGER` with the options pytest would
    get, extra arguments through --pytest-args; the template's jobs use it."""
    fake, log = recording_python
    run_action(
        {
            "python": str(fake),
            "install": "none",
            "ledger-only": "true",
            "update": "true",
            "args": "-n 2",
            "badge": "out/badge.svg",
        },
        tmp_path,
        {},
    )
    reports = tmp_path / ".runner-temp" / "pytest-toll"
    assert invocations(log)[0] == [
        "-m", "pytest_toll", "gate", "toll.yaml", "--toll-update", "--toll-badge=out/badge.svg",
        f"--toll-json={reports}/toll.json", f"--toll-markdown={reports}/toll.md",
        "--pytest-args=-n 2",
    ]  # fmt: skip
    workflow = load(TEMPLATE)
    steps = [
        step
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if ".github/actions/toll@" in step.get("uses", "")
    ]
    assert [step["with"]["ledger-only"] for step in steps] == ["true", "true"]
