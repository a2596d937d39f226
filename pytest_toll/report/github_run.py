"""A report's GitHub annotations and step summary: what a run on GitHub Actions writes.

One annotation per failing entry and per error/warn finding, worst first, each pointing at
the file and line that caused it when known (a finding's place; for a regression, the part
that grew most), else at the entry's line in the ledger (a test not yet in the ledger: at its
file); the step summary
is the Markdown report, fitted into the room other steps left.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from pytest_toll.core.inert import inert, inert_lines
from pytest_toll.core.kinds import KINDS
from pytest_toll.core.textio import MissingFile, read_file_bytes
from pytest_toll.core.tokens import O200K
from pytest_toll.report import github as actions
from pytest_toll.report import markdown as markdown_report
from pytest_toll.report.data import EntryDict, ReportDict, biggest_changes, entry_label
from pytest_toll.report.markdown_fit import close_open_fence, fit_markdown
from pytest_toll.report.places import failure_place, finding_place

_TITLE = {
    "regressed": "regressed",
    "over_budget": "over budget",
    "error": "could not measure",
    "stale": "stale",
    "improved": "improved",
    "new": "new",
    "passed": "failed",
}
_GATE_RANK = {"error": 0, "over_budget": 1, "regressed": 2, "stale": 3}


def _part_changes(entry: EntryDict, biggest: int = 5) -> list[str]:
    shown, hidden = biggest_changes(entry.get("parts", []), biggest)
    lines = [
        f"{inert(part['name'])}: {markdown_report.number(part.get('pin'))} → "
        f"{markdown_report.number(part.get('measured'))} ({markdown_report.signed(part['delta'])})"
        for part in shown
    ]
    if hidden:
        lines.append(f"… and {hidden} more changed")
    return lines


def _gate_message(entry: EntryDict) -> str:
    method = entry.get("method") or O200K
    lines = []
    if entry.get("message"):
        lines.append(str(entry["message"]))
    if entry.get("outcome") != "error":
        lines.append(
            f"measured {markdown_report.number(entry.get('measured'))} tok ({method}), "
            f"pin {markdown_report.number(entry.get('pin'))}, "
            f"budget {markdown_report.number(entry.get('budget'))}, "
            f"change {markdown_report.signed(entry.get('delta'))}"
        )
    return "\n".join(lines + _part_changes(entry))


def entry_annotations(
    report: ReportDict,
    ledger_file: str,
    where_test: Callable[[str], str | None] | None = None,
) -> list[actions.Annotation]:
    """One annotation per failing entry and per error/warn finding, worst first.

    Each points at the entry's line in ``ledger_file``. A test not yet in the ledger has no
    line there; ``where_test(nodeid)`` may then name its file instead.

    Errors: entries that fail the gate (could not measure, over budget, regressed, then those
    failed by an error finding), then error findings. Warnings: stale entries that do not
    fail, then warn findings. Notices: improved entries, whose pins can be lowered.
    """
    gate: list[tuple[int, int, actions.Annotation]] = []
    finding_errors: list[actions.Annotation] = []
    warnings: list[actions.Annotation] = []
    notices: list[actions.Annotation] = []
    for index, entry in enumerate(report.get("entries", [])):
        label = entry_label(entry)
        line = entry.get("line")
        file = ledger_file
        kind = KINDS.get(str(entry.get("kind")))
        if line is None and kind is not None and kind.python_tests and where_test is not None:
            file = where_test(str(entry.get("nodeid", ""))) or ledger_file
        outcome = str(entry.get("outcome"))
        if entry.get("failed"):
            message = _gate_message(entry)
            # At the part that grew most when its entry knows where it is written.
            grown = failure_place(entry, ledger_file)
            if grown is not None and line is not None:
                message += f"\nledger entry: {file}:{line}"
            gate.append(
                (
                    _GATE_RANK.get(outcome, 4),
                    index,
                    actions.Annotation(
                        actions.ANNOTATION_ERROR,
                        message,
                        title=f"toll: {label} {_TITLE.get(outcome, outcome)}",
                        file=file if grown is None else inert(grown[0]),
                        line=line if grown is None else grown[1],
                    ),
                )
            )
        elif outcome == "stale":
            warnings.append(
                actions.Annotation(
                    actions.ANNOTATION_WARNING,
                    entry.get("message") or "in the ledger but not measured in this run",
                    title=f"toll: {label} stale",
                    file=file,
                    line=line,
                )
            )
        elif outcome == "improved" and not entry.get("ratchet"):
            notices.append(
                actions.Annotation(
                    actions.ANNOTATION_NOTICE,
                    f"improved by {-(entry.get('delta') or 0):,} tok — ratchet with "
                    "pytest --toll --toll-update",
                    title=f"toll: {label} improved",
                    file=file,
                    line=line,
                )
            )
        for finding in entry.get("findings", []):
            severity = finding.get("severity")
            if severity not in ("error", "warn"):
                continue
            subject = finding.get("subject")
            # Each piece inert on its own: a line break in a name (a subject, a message
            # quoting one) is no line of the annotation; only the hint starts one.
            message = (f"{inert(subject)}: " if subject else "") + inert(finding.get("message", ""))
            if finding.get("hint"):
                message += f"\nhint: {inert(finding['hint'])}"
            # At the line that caused it when known, naming the ledger line it is judged by.
            place = finding_place(finding, ledger_file)
            if place is not None and line is not None:
                message += f"\nledger entry: {file}:{line}"
            annotation = actions.Annotation(
                actions.ANNOTATION_ERROR if severity == "error" else actions.ANNOTATION_WARNING,
                message,
                title=f"toll: {label} {finding.get('rule')}",
                file=file if place is None else inert(place[0]),
                line=line if place is None else place[1],
            )
            (finding_errors if severity == "error" else warnings).append(annotation)
    gate.sort(key=lambda item: (item[0], item[1]))
    made = [item[2] for item in gate] + finding_errors + warnings + notices
    # Names and messages quote third-party text: the runner decodes a message's %0A to a
    # line break inside the annotation, but an escape or bidi override would reach the log.
    return [
        replace(
            annotation,
            message=inert_lines(annotation.message),
            title=None if annotation.title is None else inert(annotation.title),
        )
        for annotation in made
    ]


def _test_file_finder(root: Path, env: Mapping[str, str]) -> Callable[[str], str | None]:
    """Node ids are relative to pytest's rootdir, where the ledger usually lives."""

    def find(nodeid: str) -> str | None:
        path = root / nodeid.split("::", 1)[0]
        return actions.workspace_path(path, env) if nodeid and path.is_file() else None

    return find


def write_github(
    report: ReportDict,
    ledger_path: Path,
    *,
    warn: Callable[[str], None],
    stream: TextIO | None = None,
    environ: Mapping[str, str],
) -> None:
    """The annotations (to ``stream``, default standard output at call time) and, when
    ``$GITHUB_STEP_SUMMARY`` names a file, the step summary appended to it."""
    out = sys.stdout if stream is None else stream
    ledger_file = actions.workspace_path(ledger_path, environ)
    lines = actions.render_annotations(
        entry_annotations(report, ledger_file, _test_file_finder(ledger_path.parent, environ))
    )
    if lines:
        # A workflow command counts only at the start of a line, and pytest's progress
        # line ("toll.yaml F..  [100%]") may still be open when the session finishes.
        out.write("\n" + "\n".join(lines) + "\n")
        out.flush()
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    summary_path = Path(summary)
    try:
        room = actions.step_summary_room(summary_path)
        before = _after(_existing(summary_path))
        room -= len(before.encode("utf-8"))
        if room <= 0:
            warn(f"pytest-toll: the step summary {summary_path} is full; nothing added")
            return
        markdown = fit_markdown(markdown_report.render(report, room), room)
        actions.append_step_summary(before + markdown, summary_path)
    except OSError as error:
        warn(
            f"pytest-toll: could not write the step summary {summary_path}: "
            f"{error.strerror or error}"
        )


def _after(existing: str) -> str:
    """What goes between what other steps wrote and ours: the end of their last line, the
    line closing a code fence they left open (it would swallow ours), and a blank line, so
    ours starts a block of its own."""
    if not existing:
        return ""
    between = "" if existing.endswith("\n") else "\n"
    between += close_open_fence(existing)
    return between if (existing + between).endswith("\n\n") else between + "\n"


def _existing(path: Path) -> str:
    """What the step summary file already holds ("" when there is none yet)."""
    try:
        return read_file_bytes(path).decode("utf-8", errors="replace")
    except MissingFile:
        return ""
