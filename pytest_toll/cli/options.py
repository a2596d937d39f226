"""Option builders shared by the verbs, so one option reads and parses the same everywhere."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import DEFAULT_TIMEOUT, DEFAULT_WINDOW


def positive_whole_number(value: str) -> int:
    """An argparse type: a whole number above zero (``1_000_000`` and ``1,000,000`` read too)."""
    try:
        number = int(value.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive whole number, not {value!r}"
        ) from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {value!r}")
    return number


def add_json_option(parser: argparse.ArgumentParser, what: str = "a JSON report") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what}")


def add_window_option(parser: argparse.ArgumentParser, shown: str = "the share") -> None:
    parser.add_argument(
        "--window",
        type=positive_whole_number,
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"context window {shown} is shown against (default {DEFAULT_WINDOW:,})",
    )


def add_top_option(parser: argparse.ArgumentParser, default: int | None, help_text: str) -> None:
    parser.add_argument(
        "--top", type=positive_whole_number, default=default, metavar="N", help=help_text
    )


class _OldSpelling(argparse.Action):
    """An option's former name, hidden from ``--help``: it still sets the option, and says on
    stderr which name replaces it."""

    def __init__(self, option_strings: list[str], dest: str, *, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(f"toll: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_old_spelling(
    parser: argparse.ArgumentParser, old: str, new: str, dest: str, value_type: type = str
) -> None:
    """``old`` as a deprecated name of the option ``new`` (stored in ``dest``)."""
    parser.add_argument(
        old,
        dest=dest,
        type=value_type,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        action=_OldSpelling,
        new=new,
    )


def add_count_tokens_options(
    parser: argparse.ArgumentParser, exact_help: str, *, old_timeout: bool = True
) -> None:
    """``--exact`` with the count_tokens endpoint's base URL and timeout (``--count-timeout``).

    The timeout was ``--timeout`` until ``toll measure`` gave that name to the MCP server's
    deadline, as ``toll weigh`` and ``toll fix`` name it; a verb without a server keeps
    ``--timeout`` as the timeout's old spelling (``old_timeout``).
    """
    parser.add_argument("--exact", action="store_true", help=exact_help)
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="count_tokens base URL (default ANTHROPIC_BASE_URL or the public API)",
    )
    parser.add_argument(
        "--count-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"count_tokens timeout (default TOLL_ANTHROPIC_TIMEOUT or {DEFAULT_TIMEOUT:g} s)",
    )
    if old_timeout:
        add_old_spelling(parser, "--timeout", "--count-timeout", "count_timeout", float)


def key_value_pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments (``--env``, ``--header``) as a dict; a malformed one is named
    by its flag only, since the argument may hold a secret."""
    pairs: dict[str, str] = {}
    for value in values:
        key, equals, rest = value.partition("=")
        if not equals or not key:
            # The argument may hold a secret: name the flag only, never the argument.
            hint = ""
            if flag == "--header" and ":" in value:
                hint = " ('Name=value', not curl's 'Name: value')"
            raise ValueError(
                f"{flag} takes KEY=VALUE{hint}; got an argument without one (not shown)"
            )
        pairs[key] = rest
    return pairs


def add_tools_source_options(parser: argparse.ArgumentParser) -> None:
    """Where a tool list comes from (exactly one of a stdio server, a URL, a file) and how
    its server is reached: ``toll weigh`` and ``toll fix`` read the same sources."""
    source = parser.add_argument_group("source (exactly one)")
    source.add_argument("--url", help="a streamable-HTTP MCP endpoint")
    source.add_argument(
        "--tools", type=Path, metavar="FILE", help="a JSON or YAML tools array or tools/list result"
    )
    source.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ARGS",
        help="a stdio MCP server, started without a shell",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="K=V", help="server environment variable"
    )
    parser.add_argument("--cwd", type=Path, metavar="DIR", help="the server's working directory")
    # The parser itself, for tools_source to tell the verb's own flags written after `--`.
    parser.set_defaults(own_parser=parser)
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K=V",
        help="HTTP header (values may use ${ENV_VAR}; never printed)",
    )


def _refuse_own_flags(args: argparse.Namespace, command: list[str]) -> None:
    """Everything after ``--`` is the server's command line, so ``toll fix -- python s.py
    --write out.json`` handed ``--write`` to the server and wrote nothing, with exit 0. A
    flag of the verb's own there is refused, with the order that works; a server that takes
    the same flag itself is started through a wrapper script."""
    parser = getattr(args, "own_parser", None)
    if parser is None or not command:
        return
    own = set(parser._option_string_actions)  # every option string the verb defines
    # Flags of another mode that servers commonly take themselves (``toll fix --surface``'s
    # --host): after `--` they stay the server's, as they were before that mode existed.
    own -= set(getattr(args, "server_flags", ()))
    misplaced = [word for word in command[1:] if word.split("=", 1)[0] in own]
    if not misplaced:
        return
    flags = " ".join(misplaced)
    raise UsageError(
        f"{', '.join(word.split('=', 1)[0] for word in misplaced)} after `--` would go to the "
        f"server, not to {parser.prog}: put {parser.prog}'s options before `--` "
        f"({parser.prog} {flags} … -- {' '.join(command[:1])} …); a server that takes the "
        "same flag itself is started through a wrapper script"
    )


def tools_source(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``weigh_source``/``fix_source`` from the options above."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    _refuse_own_flags(args, command)
    try:
        env = key_value_pairs(args.env, "--env")
        headers = key_value_pairs(args.header, "--header")
    except ValueError as error:
        raise UsageError(str(error)) from None
    if env and not command:
        raise UsageError("--env applies to a stdio server (-- COMMAND)")
    if headers and not args.url:
        raise UsageError("--header applies to --url")
    return {
        "command": command or None,
        "url": args.url,
        "tools_file": args.tools,
        "env": env or None,
        "cwd": args.cwd,
        "headers": headers or None,
        "timeout": args.timeout,
    }
