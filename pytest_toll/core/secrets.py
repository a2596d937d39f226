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

The process environment is a source of secrets too: the value of every variable whose name
says it holds a credential (:func:`is_secret_name`: ``KEY``, ``TOKEN``, ``SECRET``,
``PASSWORD``, ``CREDENTIAL``, ``AUTH``…) is scrubbed as it is at the moment of scrubbing, and
a stdio server is started without those variables, or a provider's
(:func:`inheritable_environment`), unless the ledger's ``env:`` passes one on purpose. A server
that prints its environment and fails then has nothing of ours to print.

Text is cut only after it is scrubbed, never before (:func:`cut`): a cut through a secret
would leave a piece no scrubber recognises. Where text arrives already cut (the last bytes a
server wrote to stderr), a piece of a known secret of ``MIN_FRAGMENT`` or more characters at
the cut edge is taken for the secret (:func:`scrub_window`).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MIN_SECRET_LENGTH = 6
MASK = "[secret]"
#: A piece of a known secret this long at a cut edge is taken for the secret: shorter pieces
#: of random keys turn up in ordinary text, and 12 characters of one leave too little to
#: guess the rest from.
MIN_FRAGMENT = 12
#: The shortest end (or start) of a known secret taken for the secret at a cut edge, where
#: a cut through the secret leaves exactly that; three characters or fewer say nothing of
#: the secret and would mask ordinary words by chance.
MIN_EDGE = 4
#: What marks a cut in a message.
CUT_MARK = "…"

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
    secret: any header but a public one; otherwise a secret-sounding name, a key-like value,
    or (``env``) a URL carrying a credential (:func:`url_secrets`)."""
    if kind == "header":
        return name.lower() not in _PUBLIC_HEADERS
    if kind == "env" and (is_secret_name(name) or url_secrets(value)):
        return True
    return bool(_SECRET_NAME.search(name)) or looks_like_credential(value)


def url_secrets(value: str) -> list[str]:
    """The credentials a URL carries: its userinfo's password (``postgres://me:pw@db/x``)
    or a token given as the user name (``https://ghp_…@github.com``), and the values of
    its query parameters that :func:`is_secret_setting` takes for secrets (``?key=``,
    ``api_key=``, ``token=``, ``sig=``). Empty for a value that is no such URL."""
    value = value.strip()
    if "://" not in value or any(char.isspace() for char in value):
        return []
    try:
        parts = urlsplit(value)
        found = [parts.password or ""] if "@" in parts.netloc else []
        # A user name is a secret when it reads like a key (a token given as the user); a
        # plain one (``postgres``) scrubbed everywhere would garble every message naming it.
        if "@" in parts.netloc and looks_like_credential(parts.username or ""):
            found.append(parts.username or "")
        pairs = parse_qsl(parts.query, keep_blank_values=False)
    except ValueError:
        return []
    found += [item for name, item in pairs if is_secret_setting(name, item, kind="query")]
    return [item for item in found if item]


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
    global _ordered, _environment_seen
    with _lock:
        _forms.clear()
        _ordered = ()
        _environment_seen = None


# --- the process environment ------------------------------------------------------------

#: Words in a variable's name that say its value is a credential. ``AUTH`` but not
#: ``AUTHOR`` (``GIT_AUTHOR_NAME`` is a person), ``TOKEN`` but not ``TOKENIZER``
#: (``TOKENIZERS_PARALLELISM``); ``PAT``, ``PASS``, ``PWD``, ``JWT`` and ``DSN`` as words
#: (``GH_PAT``, ``DB_PASS``, ``SMTP_PWD``, ``API_JWT``, ``SENTRY_DSN``; ``PWD`` only after
#: another word), so neither the shell's ``PWD`` nor ``PASSENGERS`` is one.
_SECRET_ENV_NAME = re.compile(
    r"KEY|TOKEN(?!IZER)|SECRET|PASS(?:WORD|WD|PHRASE)|CREDENTIAL|AUTH(?!OR)|COOKIE|PRIVATE"
    r"|(?:^|_)(?:PAT|PASS|JWT|DSN)(?:_|$)|_PWD(?:_|$)",
    re.IGNORECASE,
)
#: Providers' variables, kept from a server whatever their names say: a server measured for
#: its tool list needs none of them, and some hold credentials under plain names.
_PROVIDER_PREFIXES = (
    "ANTHROPIC_", "OPENAI_", "AZURE_", "AWS_", "GOOGLE_", "GEMINI_", "VERTEX", "GCLOUD_",
    "HF_", "HUGGING_FACE_", "HUGGINGFACE_", "COHERE_", "MISTRAL_", "GROQ_", "DEEPSEEK_",
    "XAI_", "OPENROUTER_", "TOGETHER_", "FIREWORKS_", "REPLICATE_", "PERPLEXITY_", "VOYAGE_",
    "GH_", "GITHUB_TOKEN", "CLAUDE_CODE_OAUTH", "LANGSMITH_", "LANGCHAIN_",
)  # fmt: skip


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says its value is a credential
    (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``, ``GOOGLE_APPLICATION_CREDENTIALS``)."""
    return _SECRET_ENV_NAME.search(name) is not None


def is_kept_from_servers(name: str, value: str = "") -> bool:
    """Whether a stdio server started for measurement goes without this variable: a secret
    name, any of a model provider's variables, or a URL carrying a credential
    (``DATABASE_URL=postgres://me:pw@db/x``, ``HOOK=https://h/x?token=…``)."""
    return (
        is_secret_name(name)
        or name.upper().startswith(_PROVIDER_PREFIXES)
        or bool(url_secrets(value))
    )


def inheritable_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a stdio server inherits: ``environ`` (default: this process's) minus
    every variable :func:`is_kept_from_servers` names. The ledger's ``env:`` adds to it."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items() if not is_kept_from_servers(name, value)}


def remember_environment(environ: Mapping[str, str]) -> None:
    """Remember the values of ``environ``'s secret-named variables, and the credentials of
    any value that is a URL carrying them (``DATABASE_URL=postgres://me:pw@db/x``: its
    password; a token as a URL's user name or query value: the token)."""
    found: list[str] = []
    for name, value in environ.items():
        if is_secret_name(name) and not _plain_setting(value):
            found.append(value)
        elif "://" in value:
            found += url_secrets(value)
    remember(*found)


def _plain_setting(value: str) -> bool:
    """A short single word or number (``USE_AUTH=enabled``, ``KEY_TTL=3600``): a setting, not
    a credential, and blanking it everywhere would garble every report that uses the word."""
    stripped = value.strip()
    return len(stripped) < 12 and (stripped.isalpha() or stripped.isdigit())


_environment_seen: int | None = None


def _refresh_environment() -> None:
    """Take in the process environment when it changed since the last scrub (a test's
    ``monkeypatch.setenv``, a variable set by the code under test)."""
    global _environment_seen
    # CPython's raw mapping, hashed without decoding: 3.9 µs a call for 36 variables (timeit,
    # 20,000 calls of _refresh_environment), so every scrub can afford to look.
    data = getattr(os.environ, "_data", None)
    seen = hash(tuple(data.items())) if isinstance(data, dict) else hash(tuple(os.environ.items()))
    if seen != _environment_seen:
        remember_environment(os.environ)
        _environment_seen = seen


# --- scrubbing and cutting --------------------------------------------------------------


def scrub(text: str) -> str:
    """``text`` with every known secret form replaced by ``[secret]``."""
    _refresh_environment()
    return _scrub_known(text)


def _scrub_known(text: str) -> str:
    for form in _ordered:
        if form in text:
            text = text.replace(form, MASK)
    return text


def scrub_data(value: Any) -> Any:
    """``value`` (JSON-like data: a report, a property) with every string in it scrubbed,
    keys too; other values as they are. The environment is looked at once."""
    _refresh_environment()
    return _scrub_strings(value)


def _scrub_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub_known(value)
    if isinstance(value, Mapping):
        return {_scrub_strings(key): _scrub_strings(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_strings(item) for item in value]
    return value


def _cut_end_at_edge(text: str, *, at_start: bool) -> int:
    """The length of the longest end of a known secret form (``MIN_EDGE`` or more
    characters) that ``text`` starts with (``at_start``: the secret's tail, left where the
    window's start cut it) or the longest start of one ``text`` ends with; 0 when none."""
    if len(text) < MIN_EDGE:
        return 0
    longest = 0
    probe = text[:MIN_EDGE] if at_start else text[-MIN_EDGE:]
    for form in _ordered:
        # Only where the form holds the edge's first (last) MIN_EDGE characters can the text
        # start with the form's end (end with its start): a find, not a test of every size.
        at = form.find(probe)
        while at != -1:
            size = len(form) - at if at_start else at + MIN_EDGE
            if longest < size < len(form) and size <= len(text):
                piece = text[:size] if at_start else text[-size:]
                if (form[at:] if at_start else form[:size]) == piece:
                    longest = size
            at = form.find(probe, at + 1)
    return longest


def _piece_at_edge(text: str, *, at_start: bool) -> int:
    """The length of the longest piece of a known secret form that ``text`` starts with
    (``at_start``) or ends with: a piece of ``MIN_FRAGMENT`` or more characters from
    anywhere in the form, or a shorter one that is the form's own end (``at_start``) or
    start where the cut went through it; 0 when none."""
    longest = _cut_end_at_edge(text, at_start=at_start)
    for form in _ordered:
        if len(form) < MIN_FRAGMENT:
            break  # longest first
        size = MIN_FRAGMENT
        if (text[:size] if at_start else text[-size:]) not in form or len(text) < size:
            continue
        while size < len(text) and (text[: size + 1] if at_start else text[-size - 1 :]) in form:
            size += 1
        longest = max(longest, size)
    return longest


def scrub_window(text: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
    """``text`` scrubbed, where ``text`` is a window of something longer: with ``cut_before``
    its start was cut off (the last bytes of a stream), with ``cut_after`` its end. A piece of
    a known secret left at such an edge is masked as the secret."""
    text = scrub(text)
    if cut_before:
        size = _piece_at_edge(text, at_start=True)
        if size:
            text = MASK + text[size:]
    if cut_after:
        size = _piece_at_edge(text, at_start=False)
        if size:
            text = text[:-size] + MASK
    return text


def cut(text: str, limit: int, *, keep: Literal["head", "tail"] = "head") -> str:
    """``text`` scrubbed whole, then cut to at most ``limit`` characters: its head (or its
    tail) and ``…`` where the rest was. Every truncation of a message goes through here, so
    no cut can leave a piece of a secret that the scrubber would have recognised whole."""
    text = scrub(text)
    if len(text) <= limit:
        return text
    room = max(0, limit - len(CUT_MARK))
    if keep == "head":
        return scrub_window(text[:room], cut_after=True) + CUT_MARK
    return CUT_MARK + scrub_window(text[len(text) - room :], cut_before=True)


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
