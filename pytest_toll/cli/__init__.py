"""The ``toll`` command: a thin adapter over the core, one module per verb.

Exit codes: 0 measured and nothing violated, 1 a rule or budget violated, 2 could not judge
(usage error, unreadable input, nothing to measure); 141 when the reader of stdout closed the
pipe early (as a process ended by SIGPIPE), with no traceback. A verb may add its own (``toll
init``: 4, the ledger exists); docs/ci.md's table lists them all and tests/test_docs_ci.py
keeps it in step with the ``EXIT_*`` constants each verb module returns.
Whatever a verb raises is exit 2 with one line (the traceback too with ``TOLL_DEBUG=1``), and
every line the command prints passes through the secrets scrubber first, then is made inert
(:func:`pytest_toll.core.inert.inert_lines`: no terminal escape, no bidi override, no line
that reads as a GitHub workflow command, whatever a server or a transcript put in it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import NoReturn, Protocol, TextIO

from pytest_toll._version import __version__
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.inert import inert_lines
from pytest_toll.core.secrets import cut, scrub

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_CANNOT_JUDGE = 2
#: Set to 1 to see the traceback of an unexpected error (scrubbed like everything else).
DEBUG_VARIABLE = "TOLL_DEBUG"
# A reader that closed the pipe early: the status of a process ended by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141

# (verb, module, one-line help). Each module defines ``configure(parser)`` and ``run(args)``;
# modules are imported only to build the parser and must keep their heavy imports lazy.
VERBS: list[tuple[str, str, str]] = [
    ("count", "pytest_toll.cli.count", "count the tokens of files or stdin"),
    ("skills", "pytest_toll.cli.skills", "measure Agent Skills at their three loading levels"),
    ("surface", "pytest_toll.cli.surface", "memory files, subagents, commands, plugins per host"),
    ("scan", "pytest_toll.cli.scan", "the toll table: which tool calls fill the context"),
    ("repeats", "pytest_toll.cli.repeats", "the same fetch repeated within a session"),
    ("versus", "pytest_toll.cli.versus", "compare the output tokens of two commands"),
    ("context", "pytest_toll.cli.context", "what filled a session's context at its last turn"),
    ("drift", "pytest_toll.cli.drift", "a model's tokenizer against o200k, from transcripts"),
    ("gate", "pytest_toll.cli.gate", "the ledger's gate without the repository's pytest config"),
    ("check", "pytest_toll.cli.check", "judge toll.yaml's transcripts decisions (TL001-TL005)"),
    ("weigh", "pytest_toll.cli.weigh", "the token cost of an MCP server's tools, with the rules"),
    ("fix", "pytest_toll.cli.fix", "edits that shrink a server's tools, each saving measured"),
    ("results", "pytest_toll.cli.results", "what one sample of a tool's result costs"),
    ("usage", "pytest_toll.cli.usage", "each MCP tool's cost per request beside its calls"),
    ("diff", "pytest_toll.cli.diff", "compare two JSON reports; --allow-increase makes it a gate"),
    ("merge", "pytest_toll.cli.merge", "one verdict and one ratchet from the reports of shards"),
    ("measure", "pytest_toll.cli.measure", "what one call costs before it is sent, part by part"),
    ("calibrate", "pytest_toll.cli.calibrate", "re-derive a tokenizer scale factor from samples"),
    ("github", "pytest_toll.cli.github", "the GitHub loop: outputs, PR comment, ratchet, badge"),
    ("init", "pytest_toll.cli.init", "write a starter toll.yaml from what the repository declares"),
    ("trend", "pytest_toll.cli.trend", "every pin's history, from the ledger's git log"),
    ("models", "pytest_toll.cli.models", "the model catalogue: windows, prices, tiers, scales"),
    ("doctor", "pytest_toll.cli.doctor", "check the install: vocabulary, counter, cache, ledger"),
]


class Verb(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error already; keep its message to one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CANNOT_JUDGE, scrub(f"{self.prog}: error: {message}\n"))


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser: every verb listed, only ``verb``'s module imported and its options built.

    A verb module imports the core it runs at its top, so importing all of them would load
    every job to run one; ``toll --help`` needs only the table above.
    """
    parser = _Parser(
        prog="toll",
        description="Measure what an LLM agent's surface costs in context tokens.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for name, module_name, help_text in VERBS:
        sub = verbs.add_parser(name, help=help_text, description=help_text)
        if name == verb:
            module: Verb = importlib.import_module(module_name)
            sub.set_defaults(run=module.run)
            module.configure(sub)
    return parser


def _verb_in(argv: Sequence[str]) -> str | None:
    """The verb named in ``argv``: its first word that is not an option."""
    names = {name for name, _, _ in VERBS}
    for word in argv:
        if not word.startswith("-"):
            return word if word in names else None
    return None


def fail(message: str) -> int:
    """Print a one-line "could not judge" error and return its exit code."""
    print(scrub(f"toll: error: {message}"), file=sys.stderr)
    return EXIT_CANNOT_JUDGE


class _Scrubbed:
    """A text stream whose every write passes through the secrets scrubber, then is made
    inert. Our own control sequences (``toll scan``'s progress line) go to ``unguarded``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.unguarded = stream
        self._at_line_start = True

    def write(self, text: str) -> int:
        # Mid-line (print writes its pieces one by one) a write does not start a line.
        lead = "" if self._at_line_start else "-"
        shown = inert_lines(lead + scrub(text))[len(lead) :]
        if shown:
            self._at_line_start = shown.endswith("\n")
        self._stream.write(shown)
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _scrubbed_output() -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    sys.stdout = _Scrubbed(saved[0])
    sys.stderr = _Scrubbed(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    with _scrubbed_output():
        return _main(arguments)


def _main(arguments: list[str]) -> int:
    parser = build_parser(_verb_in(arguments))
    args = parser.parse_args(arguments)
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_CANNOT_JUDGE
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    except CouldNotJudge as error:
        return fail(str(error))
    except KeyboardInterrupt:
        return fail("interrupted")
    except RecursionError:
        return fail("input nested too deeply to measure (Python's recursion limit)")
    except MemoryError:
        return fail("ran out of memory; nothing measured")
    except Exception as error:  # the safety net: never exit 1 ("violation") on a crash
        if os.environ.get(DEBUG_VARIABLE) == "1":
            traceback.print_exc()
        where = f" ({DEBUG_VARIABLE}=1 shows the traceback)"
        first = str(error).splitlines()[0] if str(error) else ""
        return fail(
            f"unexpected {type(error).__name__}: {cut(first, 300)}; nothing measured{where}"
        )
    return code


def _reader_gone() -> int:
    """The reader closed the pipe early (``toll scan | head``): stop quietly, as CLIs do.

    What is still buffered for stdout can never be written; pointing stdout at the null
    device keeps the interpreter's own flush at exit from printing a second traceback.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
