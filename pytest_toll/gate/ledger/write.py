"""Rewriting the ledger: edit it in place, keep every comment with its key, write it safely.

``rewrite_ledger`` holds the ledger's lock (:mod:`pytest_toll.gate.ledger.lock`) for the
whole read-modify-write: it re-reads the file under the lock and applies the update plan to
that fresh content, so a concurrent ``--toll-update`` is never lost. A key another run
changed since this run loaded the ledger keeps the other run's value unless this run's is a
lower pin (the ratchet never rises through a race), and is not deleted.

The document is edited with ruamel.yaml's round-trip mode (quoting, order and flow style
survive). ruamel attaches a comment to the end of the key *before* it, so adding a key at
the end of a section, or removing one, would carry a ``# --- skills ---`` line away from
``skills:``. After rendering, :func:`keep_comments` therefore puts every full-line comment
and blank line back before the key it preceded in the file as the human left it (before
the next remaining key when its own key was removed).

The new text goes to a temporary file beside the ledger (``.toll.yaml.<random>.tmp``),
fsynced, renamed over the ledger and the folder fsynced: a crash leaves either the old
ledger or the new one. A symlinked ledger is written through to its target. A read-only
ledger is never replaced. A BOM and Windows line endings are kept.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError
from pytest_toll.core.inert import has_unsafe
from pytest_toll.core.limits import LEDGER_LOCK_TIMEOUT
from pytest_toll.core.textio import remove_stale_temporaries, write_atomically
from pytest_toll.gate.ledger.lock import locked
from pytest_toll.gate.ledger.read import Keys, decode_ledger, load_yaml, read_ledger_bytes

BOM = "\ufeff"


class _Delete:
    """Marks a key path for removal in :func:`rewrite_ledger`."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()


@dataclass
class LedgerRewrite:
    """What a rewrite did: whether the file changed, and which key paths it removed."""

    written: bool
    removed: list[tuple[str, ...]] = field(default_factory=list)


# --- editing the document ---------------------------------------------------------------


@functools.cache
def _emitter() -> type:
    """ruamel's emitter, escaping a double-quoted string that holds a character
    :func:`~pytest_toll.core.inert.has_unsafe` names.

    ruamel escapes NEL and the line and paragraph separators in a double-quoted string
    already, but writes a bidi control (U+202E) as it is, so a name carrying one would show
    the ledger's line in an order other than its own. Such a string is written with every
    character beyond ASCII as an escape (only names that carry such a character).
    """
    from ruamel.yaml.emitter import Emitter

    class InertEmitter(Emitter):
        def write_double_quoted(self, text: Any, split: Any = True) -> None:
            if not has_unsafe(text):
                super().write_double_quoted(text, split)
                return
            keep = self.allow_unicode
            self.allow_unicode = False
            try:
                super().write_double_quoted(text, split)
            finally:
                self.allow_unicode = keep

    return InertEmitter


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.Emitter = _emitter()
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
    if isinstance(node, date):
        # ruamel builds a date from an unquoted 2026-12-31 (an acknowledgement's until:);
        # the ledger reader keeps it as the text it is, and the read-back compares with that.
        return node.isoformat()
    for kind in (int, float, str):
        if isinstance(node, kind):
            return kind(node)
    return node


def _flow_map() -> Any:
    from ruamel.yaml.comments import CommentedMap

    created = CommentedMap()
    created.fa.set_flow_style()
    return created


def _block_map() -> Any:
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def _wants_flow(keys: tuple[str, ...]) -> bool:
    """New small maps of numbers read best inline: ``"test": {pin: 12}``, ``pin: {body: 3}``."""
    return (len(keys) == 2 and keys[0] == "tests") or keys[-1] == "pin"


def _name(text: Any) -> Any:
    """A third-party name (a tool, a test id) as the ledger writes it: double-quoted, every
    control, bidi and line-break character an escape, when it holds one; else as it is.

    Written as ruamel would choose, NEL or U+2028 sits raw in a single-quoted scalar, which
    YAML reads as a line break and folds into a space: the ledger would not read back as
    written, and every update refused (issue #34).
    """
    if isinstance(text, str) and has_unsafe(text):
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString

        return DoubleQuotedScalarString(text)
    return text


def _to_yaml(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        created = _flow_map() if _wants_flow(keys) else _block_map()
        for key, item in value.items():
            created[_name(key)] = _to_yaml(item, (*keys, str(key)))
        return created
    return _name(value)


def _same(current: Any, new: Any) -> bool:
    return _plain(current) == _plain(new) and type(_plain(current)) is type(_plain(new))


_MISSING: Any = object()


def _get(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, Mapping) or key not in data:
            return _MISSING
        data = data[key]
    return data


#: What ``toll init`` writes beside a pin it measured; a pin rewritten later no longer is.
INIT_PIN_NOTE = "measured by toll init"


def _restate_pin_note(path: list[tuple[Any, str]], old: Any, new: Any) -> None:
    """The comment beside a rewritten pin says what wrote it now (not ``toll init``).

    The comment sits at the end of the pin's line, on the nearest key of ``path`` (for a
    skill's ``pin: {metadata: …}`` map, on ``pin``). A raised pin says it was raised on
    purpose, so a reviewer does not read an allowed increase as toll init's measurement.
    """
    raised = isinstance(old, int | float) and isinstance(new, int | float) and new > old
    now = "raised with --toll-allow-increase" if raised else "updated by --toll-update"
    for container, key in reversed(path):
        comments = getattr(getattr(container, "ca", None), "items", {}).get(key)
        token = comments[2] if comments and len(comments) > 2 else None
        if token is not None and INIT_PIN_NOTE in str(getattr(token, "value", "")):
            token.value = token.value.replace(INIT_PIN_NOTE, now)
            return


def apply_updates(
    document: Any,
    updates: Mapping[tuple[str, ...], Any],
    removed: list[tuple[str, ...]] | None = None,
) -> bool:
    """Set (or with ``DELETE`` remove) values at key paths, creating maps; True if changed."""
    changed = False
    for keys, value in updates.items():
        if not keys:
            raise ValueError("an update needs a key path")
        parent = document
        path: list[tuple[Any, str]] = []
        for depth, key in enumerate(keys[:-1]):
            path.append((parent, key))
            child = parent.get(key) if isinstance(parent, Mapping) else None
            if not isinstance(child, Mapping):
                if value is DELETE:
                    parent = None
                    break
                child = _flow_map() if _wants_flow(keys[: depth + 1]) else _block_map()
                parent[_name(key)] = child
                changed = True
            parent = child
        if parent is None:
            continue
        last = keys[-1]
        if value is DELETE:
            if last in parent:
                del parent[last]
                changed = True
                if not parent:
                    # An emptied block map would be dumped as a bare ``{}`` under its
                    # comments, which is not YAML: write it inline (``tests: {}``).
                    parent.fa.set_flow_style()
                if removed is not None:
                    removed.append(keys)
            continue
        if last in parent and _same(parent[last], value):
            continue
        old = parent.get(last)
        parent[last if last in parent else _name(last)] = _to_yaml(value, keys)
        _restate_pin_note([*path, (parent, last)], old, value)
        changed = True
    return changed


def reconcile(
    updates: Mapping[tuple[str, ...], Any], base: Mapping[str, Any] | None, fresh: Any
) -> dict[tuple[str, ...], Any]:
    """The plan as it applies to the ledger re-read under the lock.

    ``base`` is the ledger the plan was made from. Where the fresh ledger differs from it,
    another run changed the key meanwhile: its value stays, unless ours is a lower number.
    """
    if base is None:
        return dict(updates)
    kept: dict[tuple[str, ...], Any] = {}
    for keys, value in updates.items():
        before, now = _get(base, keys), _get(fresh, keys)
        if before == now or (value is not DELETE and _lower_number(value, now)):
            kept[keys] = value
    return kept


def _lower_number(value: Any, than: Any) -> bool:
    numbers = (int, float)
    if isinstance(value, bool) or isinstance(than, bool):
        return False
    return isinstance(value, numbers) and isinstance(than, numbers) and value < than


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


# --- keeping comments with their keys ---------------------------------------------------

_END: Keys = ("\0end",)


def _layout(text: str) -> tuple[dict[int, Keys], set[int]]:
    """(0-based line -> key path of the first key or list item on it, lines inside values).

    A line inside a value (a multi-line scalar, a flow collection over several lines) is
    never a comment even when it starts with ``#`` or is blank.
    """
    import yaml

    anchors: dict[int, Keys] = {}
    content: set[int] = set()
    # Each open collection: [path, is_mapping, next key or None, item count, flow start line]
    stack: list[list[Any]] = []
    flow_depth = 0

    def child_path() -> Keys:
        path, mapping, key, count, _ = stack[-1]
        return (*path, key if mapping else count)

    def value_done() -> None:
        if stack:
            top = stack[-1]
            if top[1]:
                top[2] = None
            else:
                top[3] += 1

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for event in yaml.parse(text, Loader=loader):
        start, end = event.start_mark, event.end_mark
        if start is None or end is None:
            continue
        if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            if end.line > start.line:
                content.update(range(start.line + 1, end.line + (1 if end.column else 0)))
            if stack and stack[-1][1] and stack[-1][2] is None:
                key = str(_key_text(event))
                if not flow_depth:
                    anchors.setdefault(start.line, (*stack[-1][0], key))
                stack[-1][2] = key
                continue
            if stack and not stack[-1][1] and not flow_depth:
                anchors.setdefault(start.line, child_path())
            value_done()
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            path: Keys = ()
            if stack:
                if stack[-1][1] and stack[-1][2] is None:
                    stack[-1][2] = "?"  # a complex key: its contents have no path of their own
                path = child_path()
                if not stack[-1][1] and not flow_depth:
                    anchors.setdefault(start.line, path)
            if event.flow_style:
                flow_depth += 1
            mapping = isinstance(event, yaml.MappingStartEvent)
            stack.append([path, mapping, None, 0, start.line if event.flow_style else None])
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            closed = stack.pop()
            if closed[4] is not None:
                flow_depth -= 1
                content.update(range(closed[4] + 1, end.line + 1))
            value_done()
    return anchors, content


def _key_text(event: Any) -> Any:
    import yaml

    if isinstance(event, yaml.AliasEvent):
        return f"*{event.anchor}"
    return event.value


def _is_loose(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _round_trip(text: str, shown: Path) -> Any:
    """The ledger as the round-trip writer reads it (comments, order, quoting kept). It is
    stricter than the reader in places (a tab after ``key:`` at a line's end); a ledger it
    cannot read is a usage error naming the place, and nothing is written."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return _yaml().load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{shown}:{mark.line + 1}" if mark is not None else f"{shown}"
        raise UsageError(
            f"{where}: the ledger cannot be rewritten: {error.problem}; fix that line and "
            "run the update again (nothing was written)"
        ) from None
    except YAMLError as error:
        raise UsageError(
            f"{shown}: the ledger cannot be rewritten: {error}; nothing was written"
        ) from None


def keep_comments(original: str, rendered: str) -> str:
    """``rendered`` with every full-line comment and blank line of ``original`` back before
    the key it preceded there (or, if that key is gone, before the next one that remains)."""
    import yaml

    try:
        old_anchors, old_content = _layout(original)
        new_anchors, new_content = _layout(rendered)
    except yaml.YAMLError:
        return rendered
    old_lines = original.split("\n")
    if old_lines and old_lines[-1] == "":
        old_lines.pop()
    groups: dict[Keys, list[str]] = {}
    order: list[Keys] = []
    pending: list[str] = []
    for number, line in enumerate(old_lines):
        if number not in old_content and _is_loose(line):
            pending.append(line)
        elif number in old_anchors:
            keys = old_anchors[number]
            order.append(keys)
            if pending:
                groups.setdefault(keys, []).extend(pending)
                pending = []
    order.append(_END)
    groups.setdefault(_END, []).extend(pending)
    # A group whose key is gone moves to the next key that remains (or the end).
    remaining = set(new_anchors.values()) | {_END}
    carried: list[str] = []
    for keys in order:
        if keys not in remaining:
            carried.extend(groups.pop(keys, []))
        elif carried:
            groups[keys] = carried + groups.get(keys, [])
            carried = []
    new_lines = rendered.split("\n")
    if new_lines and new_lines[-1] == "":
        new_lines.pop()
    out: list[str] = []
    for number, line in enumerate(new_lines):
        if number not in new_content and _is_loose(line):
            continue
        if number in new_anchors:
            out.extend(groups.pop(new_anchors[number], []))
        out.append(line)
    out.extend(groups.pop(_END, []))
    return "\n".join(out) + "\n"


# --- writing the file -------------------------------------------------------------------


def _require_same(new_text: str, document: Any, shown: Path) -> None:
    """Never write a ledger that does not read back as exactly the edited document."""
    try:
        written = load_yaml(new_text, shown).value
    except UsageError as error:
        written = error
    if written != _plain(document):
        raise UsageError(
            f"{shown}: the rewritten ledger would not read back as written ({written}); "
            "nothing was written — please report this ledger"
        )


def _require_writable(shown: Path, target: Path) -> None:
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise UsageError(
            f"{shown}: the ledger is read-only (mode {stat.S_IMODE(mode):o}); not overwritten "
            "(make it writable to update its pins)"
        )


def rewrite_ledger(
    path: str | Path,
    updates: Mapping[tuple[str, ...], Any],
    *,
    base: Mapping[str, Any] | None = None,
    lock_timeout: float = LEDGER_LOCK_TIMEOUT,
    check: Callable[[str], object] | None = None,
) -> LedgerRewrite:
    """Set values at key paths in the ledger file under its lock, keeping comments and order.

    ``updates`` maps key paths (``("servers", "files", "pin")``) to values (``DELETE``
    removes); missing maps are created (a missing file starts as ``version: 1``). ``base``
    is the ledger data the plan was made from (see :func:`reconcile`). Nothing is written
    when nothing changed (a second ``--toll-update`` leaves the file byte-identical).
    ``check`` is given the new text before it replaces the old and refuses it by raising
    UsageError (the loader's schema check: no write leaves a ledger later runs reject).
    """
    shown = Path(path)
    # Write through a symlink to its target, so the link stays a link.
    target = Path(os.path.realpath(shown))
    with locked(target, lock_timeout):
        remove_stale_temporaries(target)
        raw = read_ledger_bytes(target)
        text = decode_ledger(raw, shown) if raw is not None else ""
        bom = raw is not None and raw.startswith(BOM.encode("utf-8"))
        # Limits, and duplicate keys: a rewrite would silently drop the repeated entry.
        fresh = load_yaml(text, shown).value
        if fresh is not None and not isinstance(fresh, Mapping):
            raise UsageError(f"{shown}:1: the ledger must be a mapping of sections")
        plan = reconcile(updates, base, fresh or {})
        document = _round_trip(text, shown) if fresh is not None else None
        if document is None:
            from ruamel.yaml.comments import CommentedMap

            document = CommentedMap({"version": 1})
        removed: list[tuple[str, ...]] = []
        if not apply_updates(document, plan, removed):
            return LedgerRewrite(False)
        unix_text = text.replace("\r\n", "\n")
        new_text = keep_comments(unix_text, render(document, like=unix_text))
        if "\r\n" in text:
            # Keep a Windows-edited ledger's line endings, so the diff shows only the pins.
            new_text = new_text.replace("\n", "\r\n")
        if new_text == text:
            return LedgerRewrite(False)
        _require_same(new_text, document, shown)
        if check is not None:
            check(new_text)
        _require_writable(shown, target)
        try:
            write_atomically(target, (BOM if bom else "") + new_text)
        except OSError as error:
            raise UsageError(
                f"{shown}: the ledger could not be written: {error.strerror or error}"
            ) from None
    return LedgerRewrite(True, removed)


def update_ledger(path: str | Path, updates: Mapping[tuple[str, ...], Any]) -> bool:
    """:func:`rewrite_ledger` without a base; whether the file changed."""
    return rewrite_ledger(path, updates).written
