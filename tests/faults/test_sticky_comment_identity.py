"""The sticky pull-request comment edits only a comment its own token wrote.

Anyone who can comment on a pull request can copy the hidden marker into a comment of
their own; were that comment edited in place, the report would appear under their name
(and their words above it would stand as the gate's). The loop runs against a real HTTP
server on 127.0.0.1 speaking GitHub's REST wire format: ``GET /user`` answers the token's
login, or 403 "Resource not accessible by integration" as it does for the Actions token."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_toll.github.loop import MARKER, comment
from tests.local_http import serving

REPOSITORY = "acme/agent"
TOKEN = "ghs_sticky-comment-token"
NUMBER = 7
BOT = "github-actions[bot]"
INTEGRATION = "Resource not accessible by integration"
MARKED = MARKER.format(key="toll.yaml")


@dataclass
class Thread:
    """One pull request's comments and the token's identity, as GitHub keeps them."""

    #: the token's login; None: an Actions (integration) token, which /user refuses
    login: str | None
    comments: list[dict[str, Any]] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    user_status: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def author(self) -> str:
        return self.login if self.login is not None else BOT

    def add(self, login: str | None, body: str) -> dict[str, Any]:
        comment: dict[str, Any] = {"id": 1000 + len(self.comments), "body": body}
        if login is not None:
            comment["user"] = {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}
        self.comments.append(comment)
        return comment

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/user":
            if self.user_status is not None:
                return self.user_status, {"message": "Server Error"}
            if self.login is None:
                return 403, {"message": INTEGRATION}
            return 200, {"login": self.login, "id": 1, "type": "User"}
        comments = f"/repos/{REPOSITORY}/issues/{NUMBER}/comments"
        if path == comments and method == "GET":
            return 200, self.comments
        if path == comments and method == "POST":
            self.writes.append(("POST", ""))
            return 201, self.add(self.author(), body["body"])
        prefix = f"/repos/{REPOSITORY}/issues/comments/"
        if path.startswith(prefix) and method == "PATCH":
            target = next(c for c in self.comments if c["id"] == int(path[len(prefix) :]))
            self.writes.append(("PATCH", str(target["id"])))
            target["body"] = body["body"]
            return 200, target
        return 404, {"message": "Not Found"}


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[Thread, dict[str, str]]]:
    thread = Thread(login="alice")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                status, payload = 401, {"message": "Bad credentials"}
            else:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                with thread.lock:
                    status, payload = thread.handle(self.command, urlsplit(self.path).path, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "pull_request": {
                    "number": NUMBER,
                    "head": {"repo": {"full_name": REPOSITORY}},
                    "base": {"repo": {"full_name": REPOSITORY}},
                }
            }
        ),
        encoding="utf-8",
    )
    with serving(Handler) as base:
        yield (
            thread,
            {
                "GITHUB_REPOSITORY": REPOSITORY,
                "GITHUB_API_URL": base,
                "GITHUB_EVENT_PATH": str(event),
                "GITHUB_TOKEN": TOKEN,
            },
        )


def post(tmp_path: Path, environ: dict[str, str]) -> str:
    markdown = tmp_path / "toll.md"
    markdown.write_text("## pytest-toll\nthe real report\n", encoding="utf-8")
    stream = io.StringIO()
    assert comment(markdown, "toll.yaml", environ, stream) == 0
    return stream.getvalue()


FORGED = f"{MARKED}\n## pytest-toll\nall green, merge away"


@pytest.mark.parametrize(
    "author",
    [
        "mallory",  # another user
        "ALICE-",  # a near-twin login
        "github-actions",  # the bot's name without [bot]: a user can register it
        "dependabot[bot]",  # another app
        None,  # a comment GitHub shows without a user (a deleted account: "ghost")
    ],
)
def test_a_marked_comment_by_another_identity_is_never_edited(
    tmp_path: Path, github: tuple[Thread, dict[str, str]], author: str | None
) -> None:
    thread, environ = github
    thread.add(author, FORGED)
    said = post(tmp_path, environ)
    assert thread.comments[0]["body"] == FORGED
    assert [verb for verb, _ in thread.writes] == ["POST"]
    assert thread.comments[1]["user"]["login"] == "alice"
    assert "the real report" in thread.comments[1]["body"]
    assert "created comment" in said


def test_the_own_marked_comment_is_updated_past_a_forged_one(
    tmp_path: Path, github: tuple[Thread, dict[str, str]]
) -> None:
    thread, environ = github
    thread.add("mallory", FORGED)
    own = thread.add("Alice", f"{MARKED}\nlast push's report")  # logins ignore case
    said = post(tmp_path, environ)
    assert thread.writes == [("PATCH", str(own["id"]))]
    assert thread.comments[0]["body"] == FORGED
    assert "the real report" in own["body"]
    assert f"updated comment {own['id']}" in said


def test_the_actions_token_updates_the_bots_comment_only(
    tmp_path: Path, github: tuple[Thread, dict[str, str]]
) -> None:
    thread, environ = github
    thread.login = None  # GET /user: 403, as for the Actions token
    thread.add("github-actions", FORGED)
    own = thread.add(BOT, f"{MARKED}\nlast push's report")
    post(tmp_path, environ)
    assert thread.writes == [("PATCH", str(own["id"]))]
    assert thread.comments[0]["body"] == FORGED


def test_an_identity_that_cannot_be_told_edits_nothing(
    tmp_path: Path, github: tuple[Thread, dict[str, str]]
) -> None:
    thread, environ = github
    thread.user_status = 500
    thread.add("alice", FORGED)
    said = post(tmp_path, environ)
    assert thread.comments[0]["body"] == FORGED
    assert [verb for verb, _ in thread.writes] == []
    assert "no pull-request comment" in said and "500" in said
    assert TOKEN not in said


def test_with_no_marked_comment_none_is_asked_who_it_is(
    tmp_path: Path, github: tuple[Thread, dict[str, str]]
) -> None:
    thread, environ = github
    thread.user_status = 500  # never asked: nothing to compare
    thread.add("mallory", "## pytest-toll\nno marker here")
    post(tmp_path, environ)
    assert [verb for verb, _ in thread.writes] == ["POST"]
