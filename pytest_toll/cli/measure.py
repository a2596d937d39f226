"""``toll measure --model M [...]``: what one call costs before it is sent, part by part."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.calls.deferred import deferred_tools
from pytest_toll.calls.entry import load_request_file
from pytest_toll.calls.measuring import CallReport, Tuning, measure
from pytest_toll.calls.messages import system_text
from pytest_toll.calls.render import render_measure
from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION, fail
from pytest_toll.cli._ledger import add_ledger_option, catalogue_of
from pytest_toll.cli.options import add_count_tokens_options, add_json_option, add_old_spelling
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.limits import DEFAULT_TIMEOUT
from pytest_toll.core.textio import read_text
from pytest_toll.definitions.mcp.http import list_http
from pytest_toll.definitions.mcp.stdio import list_stdio
from pytest_toll.definitions.tools import load_tools_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="a model name: from the catalogue or the ledger's models: (window, prices, "
        "scale); any other name is measured with o200k, unscaled and unpriced",
    )
    add_ledger_option(parser)
    parser.add_argument(
        "--system", metavar="FILE", help="the system prompt, a text file (- reads stdin)"
    )
    parser.add_argument(
        "--messages",
        metavar="FILE",
        help="a JSON messages array (Anthropic or OpenAI shape), or a request body whose "
        "'messages', 'system' and 'tools' are used; omitted: a '.' probe message",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--tools",
        metavar="FILE",
        help="a tools array (MCP, OpenAI or Anthropic shape), JSON or YAML",
    )
    source.add_argument(
        "--server",
        metavar="COMMAND",
        help="an MCP stdio server command whose tools/list to measure",
    )
    source.add_argument(
        "--url", metavar="URL", help="a streamable-HTTP MCP endpoint whose tools/list to measure"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"MCP server timeout for --server or --url (default {DEFAULT_TIMEOUT:g} s)",
    )
    add_old_spelling(parser, "--server-timeout", "--timeout", "timeout", float)
    parser.add_argument(
        "--skills",
        metavar="DIR",
        help="a skill folder or a folder of skills (their catalogue joins the system)",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="measure compacted tool schemas (originals untouched)",
    )
    add_count_tokens_options(
        parser, "ask Anthropic's count_tokens (ANTHROPIC_API_KEY)", old_timeout=False
    )
    parser.add_argument(
        "--chars-per-token",
        type=float,
        default=None,
        metavar="N",
        help="estimate from characters instead of o200k",
    )
    parser.add_argument(
        "--tokens-per-message",
        type=int,
        default=None,
        metavar="N",
        help="per-message overhead (default 4)",
    )
    parser.add_argument(
        "--tokens-per-image",
        type=int,
        default=None,
        metavar="N",
        help="tokens per image (default: not estimated)",
    )
    parser.add_argument(
        "--core",
        metavar="NAMES",
        default=None,
        help="also compare advertising every tool with deferring all but these (comma-"
        "separated) behind a tool search and a tool loader",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="N",
        help="exit 1 when the o200k total is above N tokens (also with --exact)",
    )
    add_json_option(parser, "the JSON report")


def _measure_naming_the_file(path: str | None, *args: Any, **kwargs: Any) -> CallReport:
    """``measure()``, with errors about the messages (or a request body's system and tools)
    prefixed by the file they came from."""
    try:
        return measure(*args, **kwargs)
    except UsageError:
        raise
    except CouldNotJudge as error:
        text = str(error)
        if path and text.startswith(("messages", "system", "tools")):
            raise CouldNotJudge(f"{path}: {text}") from None
        raise


def _tools(args: argparse.Namespace) -> tuple[object, str | None]:
    """The tools to measure, and the server's instructions when they come from a server."""
    if args.timeout is not None and args.exact and not (args.server or args.url):
        # In 0.1.0 --timeout was count_tokens' timeout: say so rather than ignore it.
        raise UsageError(
            "--timeout is the MCP server's timeout (--server, --url); "
            "count_tokens' timeout is --count-timeout"
        )
    if args.tools:
        return load_tools_file(args.tools)[0], None
    if args.server or args.url:
        timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
        if args.server:
            import shlex

            try:
                command = shlex.split(args.server)
            except ValueError as error:
                raise UsageError(f"--server: cannot split the command: {error}") from None
            listing = list_stdio(command, timeout=timeout)
        else:
            listing = list_http(args.url, timeout=timeout)
        return list(listing.tools), listing.instructions
    return None, None


def run(args: argparse.Namespace) -> int:
    if args.budget is not None and args.budget < 0:
        return fail("--budget must not be negative")
    tuning = Tuning(
        chars_per_token=args.chars_per_token,
        tokens_per_message=4 if args.tokens_per_message is None else args.tokens_per_message,
        tokens_per_image=args.tokens_per_image,
    )
    messages: object = None
    system: Any = None
    tools: object = None
    settings: dict[str, Any] = {}
    if args.messages:
        messages, system, tools, settings = load_request_file(args.messages)
    if args.system:
        system = read_text(args.system)
    listed, instructions = _tools(args)
    tools = listed or tools
    system = system_text(system)
    if instructions:
        # A host puts a server's instructions in the system prompt, so they count there.
        system = "\n\n".join(text for text in (system, instructions) if text)
    catalogue = catalogue_of(args)
    client = None
    if args.exact and catalogue.resolve(args.model).provider == "anthropic":
        client = CountTokensClient.from_environment(
            base_url=args.base_url, timeout=args.count_timeout
        )
    try:
        result = _measure_naming_the_file(
            args.messages,
            args.model,
            system,
            messages,
            tools,
            skills=args.skills,
            tool_schemas="compact" if args.compact else "full",
            exact=args.exact,
            tuning=tuning,
            catalogue=catalogue,
            client=client,
            request_settings=settings,
        )
    finally:
        if client is not None:
            client.close()
    if instructions:
        note = "the server's instructions are counted in the system part"
        result = replace(result, notes=(*result.notes, note))
    deferred = None
    if args.core is not None:
        core = [name.strip() for name in args.core.split(",") if name.strip()]
        deferred = deferred_tools(
            args.model,
            tools,
            core,
            tool_schemas="compact" if args.compact else "full",
            catalogue=catalogue,
        )
    # Budgets grade the deterministic o200k count, also when native counts are shown.
    over = args.budget is not None and result.graded_tokens > args.budget
    if args.json:
        data = result.as_dict()
        if args.budget is not None:
            data["budget"] = {"tokens": args.budget, "over": over}
        if deferred is not None:
            data["deferred"] = deferred.as_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(render_measure(result, deferred, args.budget if over else None))
    return EXIT_VIOLATION if over else EXIT_OK
