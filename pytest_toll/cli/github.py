"""``toll github STEP``: the composite action's steps after ``pytest --toll``.

outputs   write verdict, fixed-cost, ledger-changed and the report paths to $GITHUB_OUTPUT
comment   post or update the pull request's sticky report comment (a fork: a notice)
ratchet   push lowered pins to toll/ratchet and open/update its pull request, or close it
badge     force-push the badge SVG and endpoint JSON to a branch
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_toll.cli import EXIT_CANNOT_JUDGE, EXIT_OK
from pytest_toll.core.errors import UsageError
from pytest_toll.core.secrets import scrub
from pytest_toll.core.textio import read_text
from pytest_toll.github import loop
from pytest_toll.github.api import GitHub, GitHubError
from pytest_toll.report.github import write_github_output
from pytest_toll.report.markdown_fit import fit_markdown
from pytest_toll.report.outputs import OUTPUTS


def configure(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_subparsers(dest="step", metavar="STEP", required=True)
    out = steps.add_parser("outputs", help="write the step outputs to $GITHUB_OUTPUT")
    out.add_argument("--report", type=Path, help="the --toll-json report of the run")
    out.add_argument("--exit-code", type=int, required=True, help="pytest's exit code")
    out.add_argument("--ledger", type=Path, default=Path("toll.yaml"))
    for name in OUTPUTS:
        out.add_argument(f"--{name}", default="", metavar="PATH", help=f"the {name} report path")
    note = steps.add_parser("comment", help="post or update the sticky pull-request comment")
    note.add_argument("--markdown", type=Path, required=True)
    note.add_argument("--key", default="toll.yaml", help="tells two ledgers' comments apart")
    up = steps.add_parser("ratchet", help="propose lowered pins on a branch, or retire it")
    up.add_argument("--ledger", type=Path, default=Path("toll.yaml"))
    up.add_argument("--branch", default="toll/ratchet")
    up.add_argument("--base", default=None, help="default: $GITHUB_REF_NAME")
    up.add_argument("--body", type=Path, help="the pull request body (the Markdown report)")
    badge = steps.add_parser("badge", help="publish the badge to a branch")
    badge.add_argument("--svg", type=Path, required=True)
    badge.add_argument("--branch", default="toll-badge")


def run(args: argparse.Namespace) -> int:
    environ = os.environ
    if args.step == "outputs":
        values = loop.outputs(
            args.report,
            args.exit_code,
            args.ledger,
            {name: getattr(args, name) for name in OUTPUTS},
        )
        target = environ.get("GITHUB_OUTPUT")
        if target:
            write_github_output(values, Path(target))
        for name, value in values.items():
            print(f"{name}: {value}")
        return EXIT_OK
    if args.step == "comment":
        return loop.comment(args.markdown, args.key, environ, sys.stdout)
    if args.step == "badge":
        loop.publish_badge(args.svg, args.branch, Path.cwd(), sys.stdout)
        return EXIT_OK
    base = args.base or environ.get("GITHUB_REF_NAME")
    if not base:
        raise UsageError("--base or $GITHUB_REF_NAME names the branch the ratchet targets")
    body = (
        read_text(args.body)
        if args.body is not None and args.body.is_file()
        else "`pytest --toll --toll-update` lowered these pins."
    )
    try:
        loop.ratchet(
            args.ledger,
            branch=args.branch,
            base=base,
            body=fit_markdown(scrub(body), loop.COMMENT_LIMIT),
            api=GitHub.from_environment(environ),
            stream=sys.stdout,
        )
    except GitHubError as error:
        hint = (
            " (the token needs contents: write and pull-requests: write, and the repository "
            'must allow "GitHub Actions to create and approve pull requests")'
            if error.forbidden
            else ""
        )
        print(f"toll: error: the ratchet: {error}{hint}", file=sys.stderr)
        return EXIT_CANNOT_JUDGE
    return EXIT_OK
