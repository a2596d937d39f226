"""The Parsing door (issue 34): one bounded loader each for JSON, YAML and TOML.

Every document toll reads from a third party goes through these: each is held to a size cap,
a nesting depth and a count of values (YAML aliases counted expanded, and capped on their
own), numbers of at most ``MAX_NUMBER_DIGITS`` digits and finite, text that is UTF-8 (a
lone surrogate written as a JSON or YAML escape becomes U+FFFD, so no encoder downstream
meets one). What cannot be loaded is a :class:`ParseError` naming the document (and its line
where the parser knows it): callers count and name it, and go on with its siblings.

Transcript lines are parsed by :func:`line_parser` (orjson when installed: the scan's hot
path); its values meet the same number bound where they are stored
(:func:`pytest_toll.transcripts.formats.base.number`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import (
    MAX_INPUT_FILE_BYTES,
    MAX_NESTING_DEPTH,
    MAX_NUMBER_DIGITS,
    MAX_YAML_ALIAS_NODES,
)
from pytest_toll.core.textio import TooDeep, check_document, describe_size


class ParseError(CouldNotJudge):
    """A document that cannot be loaded; the message names it (``name:line: why``)."""

    def __init__(
        self, name: str, why: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.name = name
        self.line = line
        self.why = why
        where = f":{line}" if line else ""
        where += f":{column}" if line and column else ""
        super().__init__(f"{name}{where}: {why}")


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _text(data: str | bytes, name: str, max_bytes: int) -> str:
    if len(data) > max_bytes:
        raise ParseError(name, f"larger than the {describe_size(max_bytes)} read limit; not read")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ParseError(
            name, f"not UTF-8 text (invalid byte at {error.start}); not read"
        ) from None


def _without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys included) made U+FFFD.
    Iterative: it never recurses (the value is already held to the depth limit)."""

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return _SURROGATE.sub("\ufffd", item)
        if isinstance(item, dict):
            return {clean(key): inner for key, inner in item.items()}
        if isinstance(item, list):
            return list(item)
        return item

    top = clean(value)
    stack = [top]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                item[key] = cleaned = clean(inner)
                stack.append(cleaned)
        elif isinstance(item, list):
            for index, inner in enumerate(item):
                item[index] = cleaned = clean(inner)
                stack.append(cleaned)
    return top


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of more than {MAX_NUMBER_DIGITS} digits")
    return int(digits)


def _bounded_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"a number out of range ({text[:20]}…)")
    return value


def _no_constant(text: str) -> float:
    raise ValueError(f"a number that is not finite ({text})")


def _checked(value: Any, name: str) -> Any:
    try:
        check_document(value)
    except TooDeep as error:
        raise ParseError(name, str(error)) from None
    return value


def load_json(data: str | bytes, name: str, *, max_bytes: int = MAX_INPUT_FILE_BYTES) -> Any:
    """A JSON document named ``name``, bounded; :class:`ParseError` when it cannot be."""
    text = _text(data, name, max_bytes)
    try:
        value = json.loads(
            text,
            parse_int=_bounded_int,
            parse_float=_bounded_float,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as error:
        raise ParseError(name, f"not valid JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise ParseError(name, f"nests deeper than {MAX_NESTING_DEPTH} levels; not read") from None
    except ValueError as error:  # a number the bounds refuse
        raise ParseError(name, f"not read: {error}") from None
    value = _checked(value, name)
    if "\\" in text and _SURROGATE_ESCAPE.search(text.encode("utf-8", "surrogatepass")):
        value = _without_surrogates(value)
    return value


def _expanded_size(root: Any, name: str, max_alias_nodes: int) -> None:
    """Refuse a composed YAML node graph whose aliases would add more than
    ``max_alias_nodes`` nodes once expanded, or that nests too deeply. Linear in the distinct
    nodes: each node's expanded size is computed once (the graph of aliases is acyclic)."""
    import yaml

    distinct: set[int] = set()
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            raise ParseError(name, f"nests deeper than {MAX_NESTING_DEPTH} levels; not read")
        if isinstance(node, yaml.ScalarNode):
            sizes[id(node)] = 1
            distinct.add(id(node))
            continue
        children = (
            [item for pair in node.value for item in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if done:
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if id(node) in sizes:
            continue
        distinct.add(id(node))
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in children if id(child) not in sizes)
    added = sizes[id(root)] - len(distinct)
    if added > max_alias_nodes:
        raise ParseError(
            name, f"aliases expand to more than {max_alias_nodes:,} more nodes; not read"
        )


def load_yaml(
    data: str | bytes,
    name: str,
    *,
    max_bytes: int = MAX_INPUT_FILE_BYTES,
    max_alias_nodes: int = MAX_YAML_ALIAS_NODES,
    first_line: int = 1,
) -> Any:
    """A YAML document named ``name`` (safe tags only), bounded; :class:`ParseError` when it
    cannot be. ``first_line`` is the file line the text starts on (frontmatter starts on 2)."""
    import yaml

    text = _text(data, name, max_bytes)
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, name, max_alias_nodes)
        value = loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        if "nesting depth" in str(error.problem):  # libyaml's own depth limit (1,000)
            raise ParseError(
                name, f"nests deeper than {MAX_NESTING_DEPTH} levels; not read"
            ) from None
        mark = error.problem_mark or error.context_mark
        line = mark.line + first_line if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        why = error.problem or error.context or "invalid YAML"
        raise ParseError(name, f"not valid YAML: {why}", line, column) from None
    except yaml.YAMLError as error:
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ParseError(name, f"not valid YAML: {why}") from None
    except RecursionError:
        raise ParseError(name, f"nests deeper than {MAX_NESTING_DEPTH} levels; not read") from None
    except (ValueError, TypeError, OverflowError) as error:
        # Odd scalars (a date out of range, an int of thousands of digits) fail as they
        # are constructed.
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ParseError(name, f"not valid YAML: {why}") from None
    finally:
        loader.dispose()
    return _without_surrogates(_checked(value, name))


def load_toml(data: str | bytes, name: str, *, max_bytes: int = MAX_INPUT_FILE_BYTES) -> Any:
    """A TOML document named ``name``, bounded; :class:`ParseError` when it cannot be."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the 3.10 twin of the standard library's reader
        import tomli as tomllib

    text = _text(data, name, max_bytes)
    try:
        value = tomllib.loads(text, parse_float=_bounded_float)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+)", str(error))
        why = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise ParseError(
            name, f"not valid TOML: {why}", int(found.group(1)) if found else None
        ) from None
    except RecursionError:
        raise ParseError(name, f"nests deeper than {MAX_NESTING_DEPTH} levels; not read") from None
    except ValueError as error:
        raise ParseError(name, f"not read: {error}") from None
    return _checked(value, name)


def line_parser() -> tuple[Callable[[bytes], Any], str]:
    """The parser of one transcript line: orjson's ``loads`` (a dependency: 2-3× the standard
    module's speed on these lines), or the standard module's where orjson cannot be
    installed; and the parser's name. Its numbers are bounded where they are stored."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; this keeps a broken
        return json.loads, "json"  # install working, only slower
    return orjson.loads, "orjson"
