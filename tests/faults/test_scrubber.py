"""The one scrubber and the bounded readers, as functions: every form a secret takes in a
message is blanked, ordinary settings are left alone, and a read stops at its limit."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from pytest_toll.core import secrets
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.textio import TooDeep, json_within_depth, read_capped
from pytest_toll.definitions.mcp.http import capped_lines, iter_sse

SECRET = "tok-\n9f8e7d6c5b"


@pytest.fixture
def registry() -> Iterator[None]:
    secrets.forget_all()
    yield
    secrets.forget_all()


@pytest.mark.usefixtures("registry")
def test_every_form_of_a_secret_is_blanked() -> None:
    secrets.remember_setting("Authorization", f"Bearer {SECRET}", kind="header")
    forms = [
        f"Illegal header value {f'Bearer {SECRET}'.encode()!r}",
        f"echo: {SECRET!r}",
        json.dumps({"auth": SECRET}),
        "first line tok-",  # a line of the secret alone is too short to be scrubbed
        "9f8e7d6c5b repeated on its own line",
    ]
    scrubbed = [secrets.scrub(text) for text in forms]
    assert "tok-\\n9f8e7d6c5b" not in "".join(scrubbed)
    assert "9f8e7d6c5b" not in "".join(scrubbed)
    assert scrubbed[1] == "echo: '[secret]'"
    assert str(CouldNotJudge(f"server said {SECRET}")) == "server said [secret]"
    assert SECRET not in repr(CouldNotJudge(f"server said {SECRET}"))


@pytest.mark.usefixtures("registry")
def test_ordinary_settings_are_not_secrets() -> None:
    secrets.remember_setting("LOG_LEVEL", "warning", kind="env")
    secrets.remember_setting("Accept", "application/json", kind="header")
    secrets.remember_setting("format", "jsonlines", kind="query")
    assert secrets.scrub("warning: application/json jsonlines") == (
        "warning: application/json jsonlines"
    )
    secrets.remember_setting("SERVICE_PASSWORD", "hunter2hunter2", kind="env")
    secrets.remember_setting("OPAQUE", "a1b2c3d4e5f6g7h8i9", kind="env")
    assert secrets.scrub("hunter2hunter2 a1b2c3d4e5f6g7h8i9") == "[secret] [secret]"


@pytest.mark.usefixtures("registry")
def test_urls_are_printed_without_userinfo_or_query_values() -> None:
    shown = secrets.redact_url("https://me:pa55word-x@host.example/mcp?api_key=abc123def456&v=1")
    assert shown == "https://***@host.example/mcp?api_key=***&v=***"
    assert secrets.scrub("login pa55word-x, key abc123def456") == "login [secret], key [secret]"


def test_reads_stop_at_their_limit() -> None:
    assert read_capped(io.BytesIO(b"x" * 10), 10) == b"x" * 10
    assert read_capped(io.BytesIO(b"x" * 11), 10) is None
    with pytest.raises(TooDeep):
        json_within_depth("[" * 5000 + "]" * 5000)
    assert json_within_depth("[" * 150 + "]" * 150) is not None


def test_sse_lines_are_split_on_every_line_end_and_capped() -> None:
    chunks = [b"event: message\r", b'\ndata: {"a"', b": 1}\r\n\r\n", b": keep\rdata: 2\n\n"]
    lines = list(capped_lines(chunks, 1000, "too long"))
    assert lines == ["event: message", 'data: {"a": 1}', "", ": keep", "data: 2", ""]
    assert list(iter_sse(lines)) == [("message", '{"a": 1}'), ("message", "2")]
    with pytest.raises(CouldNotJudge, match="too long"):
        list(capped_lines([b"data: " + b"x" * 100] * 20, 1000, "too long"))
