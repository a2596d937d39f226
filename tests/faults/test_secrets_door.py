"""One classifier of secret-looking names and values, shared by server start-up, scrubbing
and ``toll init`` (issue #34, door 4): ``*_PASS``, ``*_PWD``, ``*_JWT``, ``*PASSWORD*``, a
token as a URL's user name or query value, a DSN's password. Init never writes one into the
ledger; a server never inherits one; the stderr tail masks one its window cut."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_toll.core import secrets
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import STDERR_TAIL_BYTES
from pytest_toll.definitions.mcp.stdio import list_stdio
from tests.cli import run_toll
from tests.faults.hostile import write_server

PASSWORD = "hunter2-Pw-7c1d"
TOKEN = "ghp_9f8e7d6c5b4a39281706AbCdEf"
QUERY_KEY = "qk-5e4d3c2b1a0f9e8d"
JWT = "eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl"
SHORT_PASS = "pw-3a9b"

#: Names whose values are secrets, and names whose values are not.
SECRET_NAMES = [
    "DB_PASS", "SMTP_PWD", "API_JWT", "JWT", "MY_PASSWORD_FILE", "PASSWORD", "SENTRY_DSN",
    "REDIS_PASS_WORD", "OPENAI_API_KEY", "GH_PAT",
]  # fmt: skip
PLAIN_NAMES = ["PWD", "OLDPWD", "PASSENGERS", "COMPASS_DIR", "BYPASS_CACHE", "PATH", "DSNAME"]

#: Environment values that are secrets by their shape, whatever their names.
SECRET_VALUES = {
    "DATABASE_URL": f"postgres://app:{PASSWORD}@db.example:5432/shop",
    "HOOK": f"https://hooks.example/x?v=1&api_key={QUERY_KEY}",
    "REMOTE": f"https://{TOKEN}@github.com/org/repo.git",
    "SEARCH": f"https://search.example/q?key={QUERY_KEY}",
}
PLAIN_VALUES = {
    "HOME_PAGE": "https://example.com/docs?lang=en",
    "UPSTREAM": "ssh://git@github.com/org/repo.git",
    "LOG_LEVEL": "warning",
}


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    secrets.forget_all()
    yield
    secrets.forget_all()


def test_secret_names() -> None:
    assert [name for name in SECRET_NAMES if not secrets.is_secret_name(name)] == []
    assert [name for name in PLAIN_NAMES if secrets.is_secret_name(name)] == []


def test_a_server_inherits_no_secret_by_name_or_by_shape() -> None:
    environ = {
        **dict.fromkeys(SECRET_NAMES, "value-1234"),
        **dict.fromkeys(PLAIN_NAMES, "/x"),
        **SECRET_VALUES,
        **PLAIN_VALUES,
    }
    assert set(secrets.inheritable_environment(environ)) == {*PLAIN_NAMES, *PLAIN_VALUES}


def test_url_credentials_in_the_environment_are_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**SECRET_VALUES, **PLAIN_VALUES}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DB_PWD", SHORT_PASS + "-long")
    shown = secrets.scrub(f"{PASSWORD} {QUERY_KEY} {TOKEN} {SHORT_PASS}-long app postgres en")
    assert shown == "[secret] [secret] [secret] [secret] app postgres en"


def test_a_redacted_url_shows_no_userinfo_or_query_value() -> None:
    for url in SECRET_VALUES.values():
        shown = secrets.redact_url(url)
        for secret in (PASSWORD, QUERY_KEY, TOKEN):
            assert secret not in shown, shown


@pytest.mark.parametrize("size", range(4, 14))  # MIN_EDGE up to past MIN_FRAGMENT
def test_a_secret_cut_at_a_windows_start_is_masked(size: int) -> None:
    secrets.remember(TOKEN)
    window = TOKEN[-size:] + " failed to connect\nbye"
    assert secrets.scrub_window(window, cut_before=True) == "[secret] failed to connect\nbye"
    head = "we said hello " + TOKEN[:size]
    assert secrets.scrub_window(head, cut_after=True) == "we said hello [secret]"


@pytest.mark.parametrize("size", [4, 7, 11])
def test_the_stderr_tail_masks_a_secret_its_window_cut(tmp_path: Path, size: int) -> None:
    """A real server prints its secret and then enough that the kept tail starts
    ``size`` characters before the secret's end."""
    # One line: the tail keeps its last lines, and the line the secret ends must be one.
    filler = "x" * 60 + " "
    rest = STDERR_TAIL_BYTES - size
    argv, _ = write_server(
        tmp_path,
        "leaky",
        f"""
        secret = os.environ["LEAK_TOKEN"]
        sys.stderr.write("token=" + secret)
        sys.stderr.write({filler!r} * {rest // len(filler)} + "y" * {rest % len(filler)})
        sys.stderr.flush()
        sys.exit(3)
        """,
    )
    with pytest.raises(CouldNotJudge) as raised:
        list_stdio(argv, env={"LEAK_TOKEN": TOKEN}, timeout=60)
    message = str(raised.value)
    assert "stderr (last lines)" in message, message
    assert "…[secret]xxxx" in message, message  # the tail starts where its window cut
    for start in range(len(TOKEN) - 4 + 1):
        assert TOKEN[start : start + 4] not in message, message


@pytest.mark.slow
def test_init_writes_no_literal_url_password_or_query_secret(tmp_path: Path) -> None:
    servers = {
        "remote": {
            "type": "http",
            "url": f"https://mcp:{PASSWORD}@mcp.example/mcp?api_key={QUERY_KEY}&region=eu",
        },
        "github": {"type": "http", "url": f"https://{TOKEN}@mcp.example/gh"},
        "db": {
            "command": sys.executable,
            "args": ["-c", "pass", f"postgres://app:{PASSWORD}@db.example/shop"],
            "env": {
                "DATABASE_URL": f"postgres://app:{PASSWORD}@db.example/shop",
                "DB_PASS": SHORT_PASS,
                "SMTP_PWD": SHORT_PASS,
                "API_JWT": JWT,
                "HOOK": f"https://hooks.example/x?token={QUERY_KEY}",
                "LOG_LEVEL": "warning",
            },
        },
    }
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    # Something init can measure, so it writes the ledger: the servers need their secrets
    # set, so they are written commented out, and comments must hold no secret either.
    skill = tmp_path / ".claude" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Use when noting.\n---\nB\n")
    done = run_toll("init", cwd=tmp_path)
    ledger = (tmp_path / "toll.yaml").read_text(encoding="utf-8")
    output = done.stdout + done.stderr
    for secret in (PASSWORD, TOKEN, QUERY_KEY, SHORT_PASS, JWT):
        assert secret not in ledger, (secret, ledger)
        assert secret not in output, (secret, output)
    for reference in (
        "https://mcp:${REMOTE_PASSWORD}@mcp.example/mcp?api_key=${REMOTE_API_KEY}&region=eu",
        "https://${GITHUB_TOKEN}@mcp.example/gh",
        "postgres://app:${DB_PASSWORD}@db.example/shop",
        "${DATABASE_URL}", "${DB_PASS}", "${SMTP_PWD}", "${API_JWT}", "${HOOK}",
    ):  # fmt: skip
        assert reference in ledger, (reference, ledger)
    assert 'LOG_LEVEL: "warning"' in ledger, ledger  # no secret: copied as it was
    assert "Set REMOTE_PASSWORD in the environment" in ledger, ledger
