"""The ``toll.yaml`` ledger: load and validate it, and rewrite it without losing a comment.

Loading uses ruamel.yaml's round-trip mode because it knows the line of every key: a
broken ledger is a :class:`UsageError` naming the file, the line and the key path, never a
silent default. Unknown keys are errors (a typo must not disable a gate), and so are
duplicate keys — except, when the caller asks, under ``transcripts.decisions``, where a
duplicate is the transcripts rule TL004 and is returned for that rule to report.

Writing (``update_ledger``) edits the round-trip document in place, so comments, key order,
quoting and every human-written field survive; it writes a temporary file in the same
directory and renames it over the ledger (atomic), and does not touch the file at all when
nothing changed (a second ``--toll-update`` leaves it byte-identical).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError, describe_type

SCHEMA_PATH = Path(__file__).parents[1] / "data" / "ledger.schema.json"
DEFAULT_NAME = "toll.yaml"
DECISIONS = ("transcripts", "decisions")
SERVER_SOURCES = ("command", "url", "tools_file")


class _Delete:
    """Marks a key path for removal in :func:`update_ledger`."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()


class DuplicateKey(UsageError):
    """A key appears twice in one mapping; ``key_path`` and ``line`` say where."""

    def __init__(self, message: str, key_path: tuple[str, ...], line: int) -> None:
        super().__init__(message)
        self.key_path = key_path
        self.line = line


@dataclass
class Ledger:
    """A loaded ledger: ``data`` is plain Python; ``line_of`` finds any key's line (1-based)."""

    path: Path
    data: dict[str, Any]
    exists: bool = True
    #: (decision key, line) of each repeated key under ``transcripts.decisions`` (TL004).
    duplicate_decisions: list[tuple[str, int]] = field(default_factory=list)
    _document: Any = None

    def line_of(self, keys: Sequence[str | int]) -> int | None:
        """The line of the last key of ``keys`` (``("servers", "files")``), or None."""
        return _line_of(self._document, keys)

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}


# --- loading ----------------------------------------------------------------------------


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    # Never re-wrap a user's long line (a rewrapped description is a noisy diff).
    yaml.width = 4096
    return yaml


def _plain(node: Any) -> Any:
    """Round-trip containers to plain dicts and lists (and ruamel scalars to builtins)."""
    if isinstance(node, Mapping):
        return {str(key): _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(value) for value in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def _line_of(document: Any, keys: Sequence[str | int]) -> int | None:
    node = document
    line: int | None = None
    for key in keys:
        # ``lc`` (line/column) exists on ruamel's round-trip containers only; typed as Any.
        container: Any = node
        try:
            if isinstance(node, Mapping) and key in node:
                line = container.lc.key(key)[0] + 1
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                line = container.lc.item(key)[0] + 1
                node = node[key]
            else:
                return line
        except (AttributeError, KeyError, TypeError):
            return line
    return line


def _dotted(keys: Sequence[str | int]) -> str:
    parts = []
    for key in keys:
        parts.append(f"[{key}]" if isinstance(key, int) else str(key))
    return ".".join(parts).replace(".[", "[") or "(top level)"


def _duplicates(
    node: Any, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], int, int]]:
    """(key path, line, first line) of every repeated mapping key, in document order."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                yield (*path, key), line, seen[key]
            else:
                seen[key] = line
            yield from _duplicates(value_node, (*path, key))
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicates(item, (*path, str(index)))


def parse_ledger(
    text: str, path: Path, *, allow_duplicate_decisions: bool = False
) -> tuple[Any, list[tuple[str, int]]]:
    """The round-trip document of ``text`` and its duplicate decisions; syntax errors raise."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = _yaml()
    try:
        tree = yaml.compose(io.StringIO(text))
        duplicate_decisions: list[tuple[str, int]] = []
        for keys, line, first in _duplicates(tree):
            if allow_duplicate_decisions and keys[:-1] == DECISIONS:
                duplicate_decisions.append((keys[-1], line))
                continue
            raise DuplicateKey(
                f"{path}:{line}: {_dotted(keys)}: duplicate key (first at line {first})",
                keys,
                line,
            )
        # Duplicates were judged above; a fresh loader keeps the first value of each.
        loader = _yaml()
        loader.allow_duplicate_keys = True
        document = loader.load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = error.problem or error.context or "invalid YAML"
        raise UsageError(f"{where}: invalid YAML: {problem}") from None
    except YAMLError as error:
        raise UsageError(f"{path}: invalid YAML: {error}") from None
    return document, duplicate_decisions


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def validate(document: Any, data: Any, path: Path) -> None:
    """Check ``data`` against the ledger schema; the first error (by line) is a UsageError."""
    from jsonschema import Draft202012Validator

    if data is None:
        return
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}:1: the ledger must be a mapping of sections, not {describe_type(data, 'yaml')}"
        )
    errors = list(Draft202012Validator(schema()).iter_errors(data))
    problems: list[tuple[int, str]] = []
    for error in errors:
        keys: list[str | int] = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - set(allowed)):
                line = _line_of(document, [*keys, key]) or 1
                expected = f" (expected one of: {', '.join(allowed)})" if allowed else ""
                problems.append((line, f"{_dotted([*keys, key])}: unknown key{expected}"))
            continue
        if "propertyNames" in error.schema_path and error.validator == "enum":
            # A misspelt limit or rule id would otherwise silently leave a gate at its default.
            key = error.instance
            line = _line_of(document, [*keys, key]) or 1
            expected = ", ".join(str(option) for option in error.validator_value)
            problems.append(
                (line, f"{_dotted([*keys, key])}: unknown name (expected one of: {expected})")
            )
            continue
        line = _line_of(document, keys) or 1
        problems.append((line, f"{_dotted(keys)}: {_explain(error)}"))
    problems.extend(_check_sources(document, data))
    if problems:
        line, message = min(problems)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{path}:{line}: {message}{more}")


def _explain(error: Any) -> str:
    """A short message: the schema's own wording for a value, without dumping big instances."""
    validator = error.validator
    if validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"must be {expected}, not {describe_type(error.instance, 'yaml')} {error.instance!r}"
    if validator == "minimum":
        return f"must be at least {error.validator_value}, not {error.instance!r}"
    if validator == "exclusiveMinimum":
        return f"must be greater than {error.validator_value}, not {error.instance!r}"
    if validator == "enum":
        options = ", ".join(str(option) for option in error.validator_value)
        return f"must be one of {options}, not {error.instance!r}"
    if validator == "const":
        return f"must be {error.validator_value!r}, not {error.instance!r}"
    if validator == "pattern":
        return f"{error.instance!r} does not match {error.validator_value}"
    if validator == "minItems":
        return "must not be empty"
    if validator == "required":
        return str(error.message)
    return str(error.message)


def _check_sources(document: Any, data: dict[str, Any]) -> list[tuple[int, str]]:
    """A server entry names exactly one source: command, url or tools_file."""
    problems = []
    servers = data.get("servers")
    if not isinstance(servers, dict):
        return []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        given = [key for key in SERVER_SOURCES if key in entry]
        if len(given) != 1:
            line = _line_of(document, ["servers", name]) or 1
            found = f" (found {', '.join(given)})" if given else ""
            problems.append(
                (line, f"servers.{name}: give exactly one of command, url, tools_file{found}")
            )
    return problems


def load_ledger(
    path: str | Path, *, missing_ok: bool = False, allow_duplicate_decisions: bool = False
) -> Ledger:
    """Load and validate a ledger. Any problem is a UsageError naming file, line and key.

    A missing file is an empty ledger when ``missing_ok`` (``--toll-update`` seeds it).
    With ``allow_duplicate_decisions``, repeated keys under ``transcripts.decisions`` are
    returned in ``duplicate_decisions`` (the first value wins) instead of raising.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        if missing_ok:
            return Ledger(file, {}, exists=False)
        raise UsageError(f"{file}: no such ledger file") from None
    except IsADirectoryError:
        raise UsageError(f"{file}: is a directory, not a ledger file") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{file}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise UsageError(f"{file}: cannot read: {error.strerror or error}") from None
    return ledger_from_text(text, file, allow_duplicate_decisions=allow_duplicate_decisions)


def ledger_from_text(text: str, path: Path, *, allow_duplicate_decisions: bool = False) -> Ledger:
    """Parse and validate a ledger's text (an old version from git); ``path`` names it."""
    document, duplicates = parse_ledger(
        text, path, allow_duplicate_decisions=allow_duplicate_decisions
    )
    data = _plain(document)
    validate(document, data, path)
    return Ledger(path, data or {}, True, duplicates, document)


# --- writing ----------------------------------------------------------------------------


def _flow_map(values: Mapping[str, Any] | None = None) -> Any:
    from ruamel.yaml.comments import CommentedMap

    created = CommentedMap(values or {})
    created.fa.set_flow_style()
    return created


def _block_map() -> Any:
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def _wants_flow(keys: tuple[str, ...]) -> bool:
    """New small maps of numbers read best inline: ``"test": {pin: 12}``, ``pin: {body: 3}``."""
    return (len(keys) == 2 and keys[0] == "tests") or keys[-1] == "pin"


def _to_yaml(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        created = _flow_map() if _wants_flow(keys) else _block_map()
        for key, item in value.items():
            created[key] = _to_yaml(item, (*keys, str(key)))
        return created
    return value


def _same(current: Any, new: Any) -> bool:
    return _plain(current) == _plain(new) and type(_plain(current)) is type(_plain(new))


def apply_updates(document: Any, updates: Mapping[tuple[str, ...], Any]) -> bool:
    """Set (or with ``DELETE`` remove) values at key paths, creating maps; True if changed."""
    changed = False
    for keys, value in updates.items():
        if not keys:
            raise ValueError("an update needs a key path")
        parent = document
        for depth, key in enumerate(keys[:-1]):
            child = parent.get(key) if isinstance(parent, Mapping) else None
            if not isinstance(child, Mapping):
                if value is DELETE:
                    parent = None
                    break
                child = _flow_map() if _wants_flow(keys[: depth + 1]) else _block_map()
                parent[key] = child
                changed = True
            parent = child
        if parent is None:
            continue
        last = keys[-1]
        if value is DELETE:
            if last in parent:
                del parent[last]
                changed = True
            continue
        if last in parent and _same(parent[last], value):
            continue
        parent[last] = _to_yaml(value, keys)
        changed = True
    return changed


def _guess_indent(text: str) -> tuple[int, int]:
    """The mapping indent and the block-sequence dash offset the file already uses.

    Read from the first block key followed by a nested map (mapping indent) and the first
    one followed by a list (dash offset), so a rewrite keeps the author's style; ruamel's own
    guesser reports the sequence indent for both.
    """
    mapping: int | None = None
    offset: int | None = None
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    for parent, child in itertools.pairwise(lines):
        if not parent.rstrip().endswith(":"):
            continue
        parent_indent = len(parent) - len(parent.lstrip(" "))
        child_indent = len(child) - len(child.lstrip(" "))
        if child.lstrip().startswith("- "):
            if offset is None:
                offset = max(0, child_indent - parent_indent)
        elif mapping is None and child_indent > parent_indent:
            mapping = child_indent - parent_indent
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset or 0


def render(document: Any, like: str = "") -> str:
    yaml = _yaml()
    indent, dash = _guess_indent(like) if like else (2, 0)
    yaml.indent(mapping=indent, sequence=dash + 2, offset=dash)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path``, then rename it over ``path``."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        else:
            os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def update_ledger(path: str | Path, updates: Mapping[tuple[str, ...], Any]) -> bool:
    """Set values at key paths in the ledger file, keeping comments and order.

    ``updates`` maps key paths (``("servers", "files", "pin")``) to values (``DELETE``
    removes); missing maps are created (a missing file starts as ``version: 1``). Returns
    whether the file changed; when nothing changed the file is not written at all.
    """
    file = Path(path)
    try:
        # newline="" keeps "\r\n" as it is, so the rewrite can keep it too.
        with file.open(encoding="utf-8-sig", newline="") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = ""
    except OSError as error:
        raise UsageError(f"{file}: cannot read: {error.strerror or error}") from None
    # Duplicate keys raise here: a rewrite would silently drop the repeated entry.
    document, _ = parse_ledger(text, file)
    if document is None:
        from ruamel.yaml.comments import CommentedMap

        document = CommentedMap({"version": 1})
    elif not isinstance(document, Mapping):
        raise UsageError(f"{file}:1: the ledger must be a mapping of sections")
    if not apply_updates(document, updates):
        return False
    new_text = render(document, like=text)
    if "\r\n" in text:
        # Keep a Windows-edited ledger's line endings, so the diff shows only the pins.
        new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    if new_text == text:
        return False
    write_atomically(file, new_text)
    return True
