"""The one scrubber: every configured secret value is blanked from every message toll prints.

Secrets are the values toll is given to send somewhere else: HTTP header values (after
``${VAR}`` expansion), environment values given to a stdio server, the Anthropic API key,
URL userinfo and query values. Whoever reads one calls ``remember`` (or ``remember_setting``
for a named value); every message that leaves the process (CLI stdout and stderr,
could-not-judge messages that become plugin item failures, JSON, SARIF, JUnit) passes
through ``scrub``.

A named setting (a header, an environment variable, a query parameter) is taken for a
secret unless it plainly is not one: a standard header such as ``Accept``, or an ``env``
value such as ``LOG_LEVEL=warning`` whose name says nothing secret and whose value does
not look like a credential. Scrubbing ``warning`` from every message would garble reports.

A value is known in the forms a message may carry it: as is, as ``repr``/``bytes`` repr
escapes (``b'Bearer tok\\n'``), JSON-escaped, and line by line. Values shorter than
``MIN_SECRET_LENGTH`` are not scrubbed: blanking ``1`` or ``true`` everywhere would garble
every number and word in a report, and such a value is no secret.

The registry is process-wide on purpose: a secret configured anywhere in a run is scrubbed
from every message of that run.
"""

from __future__ import annotations

import json
import re
import threading
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MIN_SECRET_LENGTH = 6
MASK = "[secret]"

_lock = threading.Lock()
_forms: set[str] = set()
# Longest first, so a secret that contains another is blanked whole.
_ordered: tuple[str, ...] = ()


def _forms_of(value: str) -> set[str]:
    forms = {value, value.strip()}
    forms.add(repr(value)[1:-1])
    forms.add(repr(value.encode("utf-8", "backslashreplace"))[2:-1])
    forms.add(json.dumps(value)[1:-1])
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    forms.add(quote(value, safe=""))
    forms.update(value.splitlines())
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


def remember(*values: str | None) -> None:
    """Add secret values (and their escaped forms) to the scrubber."""
    global _ordered
    new: set[str] = set()
    for value in values:
        if value and len(value.strip()) >= MIN_SECRET_LENGTH:
            new |= _forms_of(value)
    if not new - _forms:
        return
    with _lock:
        _forms.update(new)
        _ordered = tuple(sorted(_forms, key=len, reverse=True))


# Names that say the value is a credential, and headers whose values never are one.
_SECRET_NAME = re.compile(
    r"key|token|secret|pass|auth|cred|session|cookie|private|signature|sig\b|bearer", re.I
)
_PUBLIC_HEADERS = frozenset(
    {"accept", "accept-language", "accept-encoding", "content-type", "user-agent"}
)
_PUBLIC_HEADERS |= {"mcp-protocol-version", "cache-control", "connection"}


def looks_like_credential(value: str) -> bool:
    """A value that reads like a key: long, no spaces, letters and digits mixed."""
    return (
        len(value) >= 16
        and not any(character.isspace() for character in value)
        and any(character.isdigit() for character in value)
        and any(character.isalpha() for character in value)
    )


def is_secret_setting(name: str, value: str, *, kind: str) -> bool:
    """Whether a named value (``kind`` ``header``, ``env`` or ``query``) is taken for a
    secret: any header but a public one; otherwise a secret-sounding name or a key-like value."""
    if kind == "header":
        return name.lower() not in _PUBLIC_HEADERS
    return bool(_SECRET_NAME.search(name)) or looks_like_credential(value)


def remember_setting(name: str, value: str | None, *, kind: str) -> None:
    """Remember a named value (``kind`` ``header``, ``env`` or ``query``) unless it plainly
    is no secret: a public header, or a value whose name and shape say nothing secret."""
    if not value or not is_secret_setting(name, value, kind=kind):
        return
    if kind == "header":
        # The whole value, and its credential after a scheme word such as "Bearer".
        _, space, credential = value.strip(" ").partition(" ")
        remember(value, credential if space else None)
        return
    remember(value)


def forget_all() -> None:
    """Empty the registry (for tests that must start from none)."""
    global _ordered
    with _lock:
        _forms.clear()
        _ordered = ()


def scrub(text: str) -> str:
    """``text`` with every known secret form replaced by ``[secret]``."""
    for form in _ordered:
        if form in text:
            text = text.replace(form, MASK)
    return text


def redact_url(url: str) -> str:
    """``url`` as it may be printed: userinfo and query values masked (and remembered)."""
    try:
        parts = urlsplit(url)
        password = parts.password
        username = parts.username
    except ValueError:
        return scrub(url)
    netloc = parts.netloc
    if "@" in netloc:
        remember(password, username)
        netloc = "***@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        for name, value in pairs:
            remember_setting(name, value, kind="query")
        query = "&".join(f"{name}=***" if value else name for name, value in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
