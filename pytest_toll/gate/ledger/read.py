"""Reading the ledger: a bounded read of a regular file, then one bounded pass over YAML events.

The ledger is read the way a hostile file would have to be read: only a regular file (a FIFO
would block, ``/dev/zero`` never ends), at most :data:`LEDGER_MAX_BYTES`, nested at most
:data:`LEDGER_MAX_DEPTH` levels, and aliases may add at most :data:`LEDGER_MAX_ALIAS_NODES`
nodes (an alias bomb of 1.3 KB otherwise expands to gigabytes). Each limit is a
:class:`UsageError` naming the file, the line and the limit.

The values are built from the parser's events in one iterative pass (no recursion, so no
nesting can exhaust the stack), with libyaml's parser when PyYAML has it: loading is linear
and a 5 MB ledger takes seconds, not minutes. Plain scalars are resolved by the YAML 1.2
core schema, as ruamel.yaml (which rewrites the ledger) reads them: ``yes`` and ``on`` are
strings, ``true`` is a boolean. Timestamps stay strings (JSON has no dates).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.limits import LEDGER_MAX_ALIAS_NODES, LEDGER_MAX_BYTES, LEDGER_MAX_DEPTH
from pytest_toll.core.textio import MissingFile, read_file_bytes

DECISIONS = ("transcripts", "decisions")
Keys = tuple[str | int, ...]

_STANDARD = "tag:yaml.org,2002:"
_BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False}
_BOOLEANS["FALSE"] = False
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_INT = re.compile(r"^[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$")
_FLOAT = re.compile(
    r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
    |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class DuplicateKey(UsageError):
    """A key appears twice in one mapping; ``key_path`` and ``line`` say where."""

    def __init__(self, message: str, key_path: tuple[str, ...], line: int) -> None:
        super().__init__(message)
        self.key_path = key_path
        self.line = line


def dotted(keys: Keys) -> str:
    parts = [f"[{key}]" if isinstance(key, int) else str(key) for key in keys]
    return ".".join(parts).replace(".[", "[") or "(top level)"


# --- the file ---------------------------------------------------------------------------


def read_ledger_bytes(path: Path, *, limit: int = LEDGER_MAX_BYTES) -> bytes | None:
    """The bytes of the ledger file, or None when there is none; bounded and never blocking
    (a FIFO or device is refused before it is read). Every failure is a usage error."""
    try:
        return read_file_bytes(path, limit, limit_name="LEDGER_MAX_BYTES")
    except MissingFile:
        return None
    except CouldNotJudge as error:
        raise UsageError(str(error)) from None


def decode_ledger(data: bytes, path: Path) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: not UTF-8 text (byte {error.start})") from None
    if text.startswith("\ufeff"):
        # The YAML reader skips any number of them, the rewriter keeps the second as part of
        # the first key: a file whose meaning depends on the reader is refused, not guessed.
        raise UsageError(f"{path}:1: more than one byte-order mark at the start; keep one")
    return text


# --- the YAML ---------------------------------------------------------------------------


@dataclass
class LoadedYaml:
    """The plain value of a YAML document, where each key is, and repeated decisions."""

    value: Any
    lines: dict[Keys, int] = field(default_factory=dict)
    #: (decision key, line) of each repeated key under ``transcripts.decisions`` (TL004).
    duplicate_decisions: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class _Frame:
    path: Keys
    container: dict[str, Any] | list[Any]
    anchor: str | None
    start_size: int
    line: int
    key: str | None = None
    key_line: int = 0
    discard: bool = False
    first_lines: dict[str, int] = field(default_factory=dict)
    merges: list[Any] = field(default_factory=list)


def load_yaml(
    text: str,
    path: Path,
    *,
    allow_duplicate_decisions: bool = False,
    max_depth: int = LEDGER_MAX_DEPTH,
    max_alias_nodes: int = LEDGER_MAX_ALIAS_NODES,
) -> LoadedYaml:
    """Parse ``text`` (one YAML document) within the ledger's limits; problems are UsageErrors.

    Duplicate keys raise :class:`DuplicateKey` — except, with ``allow_duplicate_decisions``,
    under ``transcripts.decisions``, where the first value wins and the repeat is returned.
    """
    import yaml

    if len(text) > LEDGER_MAX_BYTES:
        raise UsageError(
            f"{path}: larger than the ledger size limit of {LEDGER_MAX_BYTES:,} bytes "
            "(LEDGER_MAX_BYTES); is this really a toll.yaml?"
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    builder = _Builder(path, allow_duplicate_decisions, max_depth, max_alias_nodes)
    try:
        for event in yaml.parse(text, Loader=loader):
            builder.feed(event)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = error.problem or error.context or "invalid YAML"
        raise UsageError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"{path}: invalid YAML: {first}") from None
    return LoadedYaml(builder.result, builder.lines, builder.duplicate_decisions)


class _Builder:
    """Builds plain values from parser events, counting depth and alias expansion."""

    def __init__(
        self, path: Path, allow_duplicates: bool, max_depth: int, max_alias_nodes: int
    ) -> None:
        self.path = path
        self.allow_duplicates = allow_duplicates
        self.max_depth = max_depth
        self.max_alias_nodes = max_alias_nodes
        self.stack: list[_Frame] = []
        self.result: Any = None
        self.documents = 0
        self.lines: dict[Keys, int] = {}
        self.duplicate_decisions: list[tuple[str, int]] = []
        #: anchor -> (value, expanded node count); None while the anchor is still open.
        self.anchors: dict[str, tuple[Any, int] | None] = {}
        self.size = 0  # nodes so far, aliases counted expanded
        self.alias_nodes = 0

    def _fail(self, line: int, message: str) -> UsageError:
        return UsageError(f"{self.path}:{line}: {message}")

    def feed(self, event: Any) -> None:
        import yaml

        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self._fail(line, "invalid YAML: a ledger is one document, found a second")
        elif isinstance(event, yaml.ScalarEvent):
            try:
                value = self._scalar(event, line)
            except ValueError as error:  # an integer of more digits than Python converts
                raise self._fail(line, f"cannot read the number: {error}") from None
            self.size += 1
            self._anchor_done(event.anchor, value, 1, line)
            self._add(value, line, scalar=True)
        elif isinstance(event, yaml.AliasEvent):
            self._alias(str(event.anchor), line)
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self._open(event, line)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            self._close()

    def _scalar(self, event: Any, line: int) -> Any:
        tag = event.tag
        value: str = event.value
        if tag in (None, "!"):
            if tag is None and event.implicit[0]:
                return _resolve_plain(value)
            return value
        if tag == _STANDARD + "str":
            return value
        resolved = _resolve_plain(value)
        wanted = {
            _STANDARD + "int": int,
            _STANDARD + "float": float,
            _STANDARD + "bool": bool,
            _STANDARD + "null": type(None),
        }.get(tag)
        if wanted is float and isinstance(resolved, int) and not isinstance(resolved, bool):
            return float(resolved)
        if wanted is None or type(resolved) is not wanted:
            raise self._fail(line, f"unsupported tag {tag} on {value!r}")
        return resolved

    def _alias(self, anchor: str, line: int) -> None:
        if anchor not in self.anchors:
            raise self._fail(line, f"invalid YAML: alias *{anchor} names no anchor before it")
        known = self.anchors[anchor]
        if known is None:
            raise self._fail(line, f"alias *{anchor} is inside its own anchor (a cycle)")
        value, nodes = known
        self.alias_nodes += nodes
        self.size += nodes
        if self.alias_nodes > self.max_alias_nodes:
            raise self._fail(
                line,
                f"aliases expand past the limit of {self.max_alias_nodes:,} nodes "
                "(LEDGER_MAX_ALIAS_NODES); an alias bomb?",
            )
        self._add(value, line, scalar=not isinstance(value, dict | list))

    def _open(self, event: Any, line: int) -> None:
        import yaml

        tag = event.tag
        mapping = isinstance(event, yaml.MappingStartEvent)
        if tag not in (None, "!", _STANDARD + ("map" if mapping else "seq")):
            raise self._fail(line, f"unsupported tag {tag}")
        if self.stack and self._wants_key():
            raise self._fail(line, "a key must be a plain name, not a mapping or a list")
        if len(self.stack) >= self.max_depth:
            raise self._fail(
                line,
                f"nested deeper than the limit of {self.max_depth} levels (LEDGER_MAX_DEPTH)",
            )
        path = self._child_path()
        self.size += 1
        if event.anchor is not None:
            self.anchors[event.anchor] = None
        self.stack.append(_Frame(path, {} if mapping else [], event.anchor, self.size - 1, line))

    def _close(self) -> None:
        frame = self.stack.pop()
        container = frame.container
        if isinstance(container, dict):
            # Merge keys (``<<: *defaults``): keys written in the mapping win.
            for merged in frame.merges:
                for source in merged if isinstance(merged, list) else [merged]:
                    for key, value in source.items():
                        container.setdefault(key, value)
        self._anchor_done(frame.anchor, container, self.size - frame.start_size, frame.line)
        self._add(container, frame.line, scalar=False)

    def _anchor_done(self, anchor: str | None, value: Any, nodes: int, line: int) -> None:
        if anchor is not None:
            self.anchors[anchor] = (value, nodes)

    def _wants_key(self) -> bool:
        top = self.stack[-1]
        return isinstance(top.container, dict) and top.key is None

    def _child_path(self) -> Keys:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.container, dict):
            return (*top.path, top.key or "")
        return (*top.path, len(top.container))

    def _add(self, value: Any, line: int, *, scalar: bool) -> None:
        if not self.stack:
            self.result = value
            return
        top = self.stack[-1]
        container = top.container
        if isinstance(container, list):
            item: Keys = (*top.path, len(container))
            self.lines[item] = line
            container.append(value)
            return
        if top.key is None:
            if not scalar:
                raise self._fail(line, "a key must be a plain name, not a mapping or a list")
            self._take_key(top, value, line)
            return
        key, top.key = top.key, None
        if top.discard:
            top.discard = False
        elif key == "<<" and top.key_line < 0:
            if not all(
                isinstance(item, dict) for item in (value if isinstance(value, list) else [value])
            ):
                raise self._fail(line, "a merge key (<<) takes a mapping or a list of mappings")
            top.merges.append(value)
        else:
            container[key] = value

    def _take_key(self, top: _Frame, value: Any, line: int) -> None:
        key = str(value)
        path = top.path
        top.key = key
        top.key_line = line
        if key == "<<" and value == "<<":
            top.key_line = -line  # a merge key, not a field
            return
        first = top.first_lines.get(key)
        if first is None:
            top.first_lines[key] = line
            where: Keys = (*path, key)
            self.lines[where] = line
            return
        top.discard = True
        if self.allow_duplicates and path == DECISIONS:
            self.duplicate_decisions.append((key, line))
            return
        keys = tuple(str(part) for part in (*path, key))
        raise DuplicateKey(
            f"{self.path}:{line}: {dotted((*path, key))}: duplicate key (first at line {first})",
            keys,
            line,
        )


def _resolve_plain(value: str) -> Any:
    """A plain scalar by the YAML 1.2 core schema (ruamel.yaml's reading)."""
    if value in _NULLS:
        return None
    if value in _BOOLEANS:
        return _BOOLEANS[value]
    if _INT.match(value):
        digits = value.replace("_", "")
        sign = -1 if digits.startswith("-") else 1
        digits = digits.lstrip("+-")
        for prefix, base in (("0b", 2), ("0o", 8), ("0x", 16)):
            if digits.startswith(prefix):
                return sign * int(digits[2:] or "0", base)
        return sign * int(digits)
    if _FLOAT.match(value):
        digits = value.replace("_", "").lower()
        if digits.endswith("inf"):
            return -math.inf if digits.startswith("-") else math.inf
        if digits.endswith("nan"):
            return math.nan
        return float(digits)
    return value
