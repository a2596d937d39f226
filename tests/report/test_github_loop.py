"""The GitHub loop end to end, as a user's workflow runs it: the composite action's steps
run as scripts with the runner's ``GITHUB_*`` files, a bare git repository as ``origin``, and
a real HTTP server on 127.0.0.1 speaking the slice of the REST API the loop uses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from pytest_toll.github.loop import verdict
from tests.local_http import serving

ROOT = Path(__file__).resolve().parents[2]
ACTION_DIR = ROOT / ".github" / "actions" / "toll"
DEMO = ROOT / "examples" / "demo"
REPOSITORY = "acme/agent"
TOKEN = "test-token-never-printed"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
READ_SENTENCE = "Returns the note's Markdown body, its tags and when it was last edited."
SHORTER_READ = "Returns the note's Markdown body and tags."


class FakeGitHub:
    """Issue comments, pull requests and ref deletion, kept in memory; refs are deleted from
    the bare repository for real, so a deleted branch is gone from ``origin``."""

    def __init__(self, remote: Path) -> None:
        self.remote = remote
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str]] = []
        self.next_id = 100
        self.read_only = False

    def handle(self, method: str, url: str, body: Any) -> tuple[int, Any]:
        parts = urlsplit(url)
        path, query = parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.requests.append((method, path))
        if path == "/user":  # as GitHub answers the Actions token
            return 403, {"message": "Resource not accessible by integration"}
        prefix = f"/repos/{REPOSITORY}"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}
        path = path[len(prefix) :]
        if self.read_only and method != "GET":
            return 403, {"message": "Resource not accessible by integration"}
        if match := re.fullmatch(r"/issues/(\d+)/comments", path):
            thread = self.comments.setdefault(int(match[1]), [])
            if method == "GET":
                page, size = int(query.get("page", 1)), int(query.get("per_page", 30))
                return 200, thread[(page - 1) * size : page * size]
            self.next_id += 1
            thread.append(
                {
                    "id": self.next_id,
                    "body": body["body"],
                    "user": {"login": "github-actions[bot]", "type": "Bot"},
                }
            )
            return 201, thread[-1]
        if match := re.fullmatch(r"/issues/comments/(\d+)", path):
            for thread in self.comments.values():
                for comment in thread:
                    if comment["id"] == int(match[1]):
                        comment["body"] = body["body"]
                        return 200, comment
            return 404, {"message": "Not Found"}
        if path == "/pulls" and method == "GET":
            owner = REPOSITORY.split("/")[0]
            return 200, [
                pull
                for pull in self.pulls
                if pull["state"] == query.get("state", "open")
                and f"{owner}:{pull['head']}" == query.get("head")
                and pull["base"] == query.get("base")
            ]
        if path == "/pulls" and method == "POST":
            self.next_id += 1
            pull = {**body, "number": self.next_id, "state": "open"}
            self.pulls.append(pull)
            return 201, pull
        if match := re.fullmatch(r"/pulls/(\d+)", path):
            pull = next(p for p in self.pulls if p["number"] == int(match[1]))
            pull.update(body)
            return 200, pull
        if match := re.fullmatch(r"/git/refs/(heads/.+)", path):
            done = subprocess.run(["git", "update-ref", "-d", f"refs/{match[1]}"], cwd=self.remote)
            return (204, None) if done.returncode == 0 else (422, {"message": "no such ref"})
        return 404, {"message": "Not Found"}


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, str]]:
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    state = FakeGitHub(remote)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                status, payload = 401, {"message": "Bad credentials"}
            else:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, payload = state.handle(self.command, self.path, body)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as base:
        yield state, base


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.test",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.test",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_IDENTITY},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def checkout(tmp_path: Path, remote: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(path))
    return path


def seed(tmp_path: Path, remote: Path) -> Path:
    """main holds a copy of the demo; returns a working clone of it."""
    work = tmp_path / "seed"
    shutil.copytree(DEMO, work, ignore=shutil.ignore_patterns("__pycache__"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "the demo")
    git(work, "push", "-q", str(remote), "main")
    return work


def run_action(
    inputs: Mapping[str, str], workspace: Path, github_env: Mapping[str, str]
) -> tuple[list[subprocess.CompletedProcess[str]], dict[str, str]]:
    """The action's steps as the runner runs them; returns the results and the outputs."""
    action = yaml.safe_load((ACTION_DIR / "action.yml").read_text(encoding="utf-8"))
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    step_outputs: dict[str, dict[str, str]] = {}

    def evaluate(expression: str) -> str:
        if match := re.fullmatch(r"inputs\.([\w-]+)", expression):
            return values[match[1]]
        if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
            return step_outputs.get(match[1], {}).get(match[2], "")
        raise AssertionError(f"unsupported expression: {expression}")

    def condition(expression: str | None) -> bool:
        if expression is None:
            return True
        match = re.fullmatch(r"inputs\.([\w-]+) (==|!=) '([^']*)'", expression.strip())
        assert match, expression
        return (values[match[1]] == match[3]) == (match[2] == "==")

    temp = workspace.parent / "runner-temp"
    temp.mkdir(exist_ok=True)
    results = []
    for index, step in enumerate(action["runs"]["steps"]):
        if not condition(step.get("if")):
            continue
        script = temp / f"step-{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        output_file = temp / f"output-{index}"
        output_file.write_text("")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_"))},
            **github_env,
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(ACTION_DIR),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
            "RUNNER_TEMP": str(temp),
            "XDG_CACHE_HOME": str(temp / "cache"),
        }
        env.update(
            {
                key: EXPRESSION.sub(lambda m: evaluate(m[1]), str(value))
                for key, value in step.get("env", {}).items()
            }
        )
        directory = workspace / EXPRESSION.sub(
            lambda m: evaluate(m[1]), step.get("working-directory", ".")
        )
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        results.append(result)
        if "id" in step:
            step_outputs[step["id"]] = parse_outputs(output_file.read_text(encoding="utf-8"))
        if result.returncode != 0:
            break
    outputs = {
        name: EXPRESSION.sub(lambda m: evaluate(m[1]), spec["value"])
        for name, spec in action["outputs"].items()
    }
    return results, outputs


def parse_outputs(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` in the runner's two forms: ``name=value`` and heredoc."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == delimiter:
                    break
                body.append(inner)
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def event_file(tmp_path: Path, name: str, data: Mapping[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def pull_request_event(tmp_path: Path, head_repository: str) -> dict[str, str]:
    payload = {
        "pull_request": {
            "number": 7,
            "head": {"repo": {"full_name": head_repository}},
            "base": {"repo": {"full_name": REPOSITORY}},
        },
        "repository": {"full_name": REPOSITORY},
    }
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": event_file(
            tmp_path, f"pr-{head_repository.replace('/', '-')}", payload
        ),
    }


COMMON_INPUTS = {
    "python": sys.executable,
    "install": "none",
    "args": "-p no:cacheprovider",
    "token": TOKEN,
}


@pytest.mark.slow
def test_gate_on_a_pull_request_creates_the_comment_then_updates_it(
    tmp_path: Path, github: tuple[FakeGitHub, str]
) -> None:
    state, api_url = github
    seed(tmp_path, state.remote)
    work = checkout(tmp_path, state.remote, "pr")
    env = {
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_API_URL": api_url,
        **pull_request_event(tmp_path, REPOSITORY),
    }
    results, outputs = run_action(COMMON_INPUTS, work, env)
    assert [r.returncode for r in results] == [0], results[-1].stdout + results[-1].stderr
    assert "created comment" in results[0].stdout
    assert outputs["verdict"] == "passed" and outputs["ledger-changed"] == "false"
    assert outputs["fixed-cost"] == "923"
    assert Path(outputs["json"]).is_file() and Path(outputs["markdown"]).is_file()
    (first,) = state.comments[7]
    assert first["body"].startswith("<!-- pytest-toll:comment toll.yaml -->\n## pytest-toll")
    assert "| ✅ ok | servers::notes | 488 | 488 | 800 | 0 | o200k |" in first["body"]

    # The next push grows a description: the same comment now shows the regression.
    server = work / "notes_server.py"
    server.write_text(
        server.read_text(encoding="utf-8").replace(
            READ_SENTENCE, READ_SENTENCE + " Also its links."
        ),
        encoding="utf-8",
    )
    results, outputs = run_action(COMMON_INPUTS, work, env)
    assert results[-1].returncode == 1  # the gate fails the step
    assert "updated comment" in results[-1].stdout
    assert outputs["verdict"] == "failed"
    (only,) = state.comments[7]
    assert only["id"] == first["id"] and "regressed" in only["body"]
    assert [m for m, p in state.requests if p.endswith("/comments")] == ["GET", "POST", "GET"]
    assert TOKEN not in results[-1].stdout + results[-1].stderr


@pytest.mark.slow
def test_a_fork_skips_the_comment_with_a_notice_and_still_gates(
    tmp_path: Path, github: tuple[FakeGitHub, str]
) -> None:
    state, api_url = github
    seed(tmp_path, state.remote)
    work = checkout(tmp_path, state.remote, "fork")
    env = {
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_API_URL": api_url,
        **pull_request_event(tmp_path, "someone/agent"),
    }
    results, outputs = run_action(COMMON_INPUTS, work, env)
    assert [r.returncode for r in results] == [0]
    assert "::notice title=pytest-toll::pull request #7 comes from a fork" in results[0].stdout
    assert outputs["verdict"] == "passed" and state.requests == []
    # A same-repository PR whose token turns out read-only: a notice too, never a failure.
    state.read_only = True
    env.update(pull_request_event(tmp_path, REPOSITORY))
    results, _ = run_action(COMMON_INPUTS, work, env)
    assert [r.returncode for r in results] == [0]
    assert "no pull-request comment: POST" in results[0].stdout and "403" in results[0].stdout


def remote_file(remote: Path, ref: str, path: str) -> str:
    return git(remote, "show", f"{ref}:{path}")


@pytest.mark.slow
def test_ratchet_opens_the_pull_request_then_closes_it_after_a_revert(
    tmp_path: Path, github: tuple[FakeGitHub, str]
) -> None:
    state, api_url = github
    seed_work = seed(tmp_path, state.remote)
    server = seed_work / "notes_server.py"
    original = server.read_text(encoding="utf-8")
    server.write_text(original.replace(READ_SENTENCE, SHORTER_READ), encoding="utf-8")
    git(seed_work, "commit", "-qam", "trim read_note")
    git(seed_work, "push", "-q", str(state.remote), "main")
    env = {
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_API_URL": api_url,
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REF_NAME": "main",
    }
    inputs = {**COMMON_INPUTS, "update": "true", "ratchet": "true"}
    work = checkout(tmp_path, state.remote, "main-1")
    results, outputs = run_action(inputs, work, env)
    assert [r.returncode for r in results] == [0, 0], results[-1].stdout + results[-1].stderr
    assert outputs["ledger-changed"] == "true"
    (pull,) = state.pulls
    assert (pull["head"], pull["base"], pull["state"]) == ("toll/ratchet", "main", "open")
    assert "opened pull request" in results[1].stdout
    proposed = yaml.safe_load(remote_file(state.remote, "toll/ratchet", "toll.yaml"))
    assert proposed["servers"]["notes"]["pin"] < 488
    assert git(state.remote, "rev-parse", "toll/ratchet~1") == git(
        state.remote, "rev-parse", "main"
    )
    # The checkout itself is left as the update wrote it; nothing was committed on main.
    assert git(work, "status", "--porcelain") == "M toll.yaml"

    # A second improvement-free run on the same main updates the same pull request.
    results, _ = run_action(inputs, checkout(tmp_path, state.remote, "main-2"), env)
    assert "now carries the lowered pins" in results[1].stdout and len(state.pulls) == 1

    # The trim is reverted on main: nothing can drop, so the stale proposal is closed.
    server.write_text(original, encoding="utf-8")
    git(seed_work, "commit", "-qam", "revert the trim")
    git(seed_work, "push", "-q", str(state.remote), "main")
    results, outputs = run_action(inputs, checkout(tmp_path, state.remote, "main-3"), env)
    assert [r.returncode for r in results] == [0, 0], results[-1].stdout + results[-1].stderr
    assert outputs["ledger-changed"] == "false"
    assert pull["state"] == "closed"
    assert "Closed by pytest-toll" in state.comments[pull["number"]][0]["body"]
    assert "toll/ratchet" not in git(state.remote, "branch", "--list")
    assert ("DELETE", f"/repos/{REPOSITORY}/git/refs/heads/toll/ratchet") in state.requests


def test_ratchet_with_a_missing_ledger_is_an_error_not_silence(
    tmp_path: Path, github: tuple[FakeGitHub, str]
) -> None:
    state, api_url = github
    seed(tmp_path, state.remote)
    work = checkout(tmp_path, state.remote, "main")
    env = {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": api_url, "GITHUB_REF_NAME": "main"}
    inputs = {**COMMON_INPUTS, "update": "true", "ratchet": "true", "ledger": "ledgers/toll.yaml"}
    results, _ = run_action(inputs, work, env)
    assert results[-1].returncode == 2
    assert "ledgers/toll.yaml: no ledger there" in results[-1].stderr


@pytest.mark.slow
def test_badge_branch_holds_the_badge_and_is_pushed_only_when_it_changes(
    tmp_path: Path, github: tuple[FakeGitHub, str]
) -> None:
    state, api_url = github
    seed(tmp_path, state.remote)
    env = {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": api_url, "GITHUB_REF_NAME": "main"}
    inputs = {
        **COMMON_INPUTS,
        "badge": str(tmp_path / "out" / "toll-badge.svg"),
        "badge-branch": "toll-badge",
    }
    results, outputs = run_action(inputs, checkout(tmp_path, state.remote, "main-1"), env)
    assert [r.returncode for r in results] == [0, 0], results[-1].stdout + results[-1].stderr
    assert "published the badge to toll-badge" in results[1].stdout
    assert "923 tok (o200k)" in remote_file(state.remote, "toll-badge", "toll-badge.svg")
    endpoint = json.loads(remote_file(state.remote, "toll-badge", "toll-badge.json"))
    assert endpoint["message"] == "923 tok (o200k)"
    assert git(state.remote, "rev-list", "--count", "toll-badge") == "1"
    assert outputs["badge"] == inputs["badge"]
    results, _ = run_action(inputs, checkout(tmp_path, state.remote, "main-2"), env)
    assert "toll-badge already shows this badge" in results[1].stdout


def test_verdict_names_could_not_judge_apart_from_failed() -> None:
    ok = {"outcome": "passed", "failed": False}
    error = {"outcome": "error", "failed": True}
    regressed = {"outcome": "regressed", "failed": True}
    assert verdict({"entries": [ok]}, 0) == "passed"
    assert verdict({"entries": [ok, error]}, 1) == "could-not-judge"
    assert verdict({"entries": [error, regressed]}, 1) == "failed"
    assert verdict({"entries": [ok]}, 1) == "failed"  # another test failed
    assert verdict(None, 4) == "could-not-judge"
    assert verdict({"entries": [ok]}, 4) == "could-not-judge"
