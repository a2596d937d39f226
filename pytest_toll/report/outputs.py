"""Everything a session writes besides the terminal summary, from one report dict.

The plugin's controller calls :func:`write_outputs` once at session end with
``SessionReport.as_dict()``: Markdown (``--toll-markdown``), a badge (``--toll-badge``),
SARIF (``--toll-sarif``) and, on GitHub Actions, annotations and the step summary. A file
that cannot be written is a warning, never an exception: the gate's verdict is already made
and must not be replaced by a traceback about a report file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from pytest_toll.core import project
from pytest_toll.core.tokens import O200K
from pytest_toll.gate.kinds import KINDS
from pytest_toll.report import badge as badges
from pytest_toll.report import github as actions
from pytest_toll.report import html as html_report
from pytest_toll.report import markdown as markdown_report
from pytest_toll.report import sarif as sarif_report
from pytest_toll.report.model import EntryDict, ReportDict, biggest_changes

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
        f"{part['name']}: {markdown_report.number(part.get('pin'))} → "
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
        label = markdown_report.entry_label(entry)
        line = entry.get("line")
        file = ledger_file
        kind = KINDS.get(str(entry.get("kind")))
        if line is None and kind is not None and kind.python_tests and where_test is not None:
            file = where_test(str(entry.get("nodeid", ""))) or ledger_file
        outcome = str(entry.get("outcome"))
        if entry.get("failed"):
            gate.append(
                (
                    _GATE_RANK.get(outcome, 4),
                    index,
                    actions.Annotation(
                        actions.ANNOTATION_ERROR,
                        _gate_message(entry),
                        title=f"toll: {label} {_TITLE.get(outcome, outcome)}",
                        file=file,
                        line=line,
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
            message = (f"{subject}: " if subject else "") + str(finding.get("message", ""))
            if finding.get("hint"):
                message += f"\nhint: {finding['hint']}"
            annotation = actions.Annotation(
                actions.ANNOTATION_ERROR if severity == "error" else actions.ANNOTATION_WARNING,
                message,
                title=f"toll: {label} {finding.get('rule')}",
                file=file,
                line=line,
            )
            (finding_errors if severity == "error" else warnings).append(annotation)
    gate.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in gate] + finding_errors + warnings + notices


def headline_tokens(report: ReportDict) -> int | None:
    """The badge's number: the fixed cost per request, or None when nothing was measured."""
    measured = any(entry.get("measured") is not None for entry in report.get("entries", []))
    if not measured:
        return None
    fixed: Mapping[str, Any] = report.get("fixed_cost") or {}
    return int(fixed.get("tokens", 0))


def badge_for(report: ReportDict) -> badges.Badge:
    fixed: Mapping[str, Any] = report.get("fixed_cost") or {}
    gap = ""
    if fixed.get("errors"):
        gap = badges.ERROR_MESSAGE
    elif fixed.get("unmeasured"):
        gap = badges.PARTIAL_MESSAGE
    return badges.make_badge(
        headline_tokens(report),
        failed=bool(report.get("failed")),
        gap=gap,
        link=project.home_url() or "",
    )


def _test_file_finder(root: Path, env: Mapping[str, str]) -> Callable[[str], str | None]:
    """Node ids are relative to pytest's rootdir, where the ledger usually lives."""

    def find(nodeid: str) -> str | None:
        path = root / nodeid.split("::", 1)[0]
        return actions.workspace_path(path, env) if nodeid and path.is_file() else None

    return find


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8", newline="\n")


def write_outputs(
    report: ReportDict,
    *,
    markdown: Path | None,
    badge: Path | None,
    sarif: Path | None,
    github: bool,
    ledger_path: Path,
    warn: Callable[[str], None],
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    html: Path | None = None,
    trend: Mapping[str, Any] | None = None,
) -> None:
    """Write the requested report files; with ``github``, annotations and the step summary.

    ``stream`` receives the workflow commands (default: standard output at call time).
    """
    env = os.environ if environ is None else environ
    ledger_file = actions.workspace_path(ledger_path, env)
    if markdown is not None:
        _attempt(
            warn,
            f"the Markdown report {markdown}",
            lambda: _write(
                markdown, markdown_report.render(report, markdown_report.COMMENT_LIMIT_BYTES)
            ),
        )
    if badge is not None:
        made = badge_for(report)
        svg_path = badge.with_suffix(".svg") if badge.suffix == ".json" else badge
        json_path = svg_path.with_suffix(".json")
        _attempt(warn, f"the badge {svg_path}", lambda: _write(svg_path, made.svg()))
        _attempt(
            warn,
            f"the badge endpoint {json_path}",
            lambda: _write(json_path, json.dumps(made.endpoint(), indent=2) + "\n"),
        )
    if sarif is not None:
        log = sarif_report.render(report, ledger_file)
        _attempt(
            warn,
            f"the SARIF report {sarif}",
            lambda: _write(sarif, json.dumps(log, indent=2) + "\n"),
        )
    if html is not None:
        page = html_report.render_page(
            f"toll report: {report.get('ledger')}", session=report, trend=trend
        )
        _attempt(warn, f"the HTML page {html}", lambda: _write(html, page))
    if github:
        out = sys.stdout if stream is None else stream
        lines = actions.render_annotations(
            entry_annotations(report, ledger_file, _test_file_finder(ledger_path.parent, env))
        )
        if lines:
            # A workflow command counts only at the start of a line, and pytest's progress
            # line ("toll.yaml F..  [100%]") may still be open when the session finishes.
            out.write("\n" + "\n".join(lines) + "\n")
            out.flush()
        summary = env.get("GITHUB_STEP_SUMMARY")
        if summary:
            summary_path = Path(summary)

            def append() -> None:
                room = actions.step_summary_room(summary_path)
                actions.append_step_summary(markdown_report.render(report, room), summary_path)

            _attempt(warn, f"the step summary {summary_path}", append)


def _attempt(warn: Callable[[str], None], what: str, action: Callable[[], None]) -> None:
    try:
        action()
    except OSError as error:
        warn(f"pytest-toll: could not write {what}: {error.strerror or error}")
