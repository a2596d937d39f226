"""Every file a session writes besides the terminal summary: one table of outputs, one writer.

An :class:`Output` row is all there is to a report file. Its ``name`` gives pytest's
``--toll-<name>`` option and ``toll_<name>`` ini twin, the resolved ``Settings.outputs``
key, ``toll github outputs --<name>`` and the composite action's ``<name>`` input and output;
with ``on_merge``, ``toll merge --<name>`` too. Its ``renderer`` turns the report dict
(``SessionReport.as_dict()``) into the files to write. Adding an output format is one
renderer module and one row here.

:func:`write_outputs` writes the requested rows and, on GitHub Actions, the annotations and
the step summary (:mod:`pytest_toll.report.github_run`). A file that cannot be written is a
warning, never an exception: the gate's verdict is already made and must not be replaced by a
traceback about a report file. Every file is written atomically.

Every string of the report is scrubbed of known secrets before any renderer sees it (so a
renderer that cuts text cuts scrubbed text), and every rendered file once more before it is
written (:mod:`pytest_toll.core.secrets`).

The plugin reads this table in every pytest run to register its options, so the renderers'
modules are imported inside the row functions below: a plain ``pytest`` run, and a ``--toll``
run that asks for no report file, load none of them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pytest_toll.report.data import ReportDict

#: The pins' history for a renderer that charts it (None: the ledger is not in git).
History = Mapping[str, Any] | None


@dataclass(frozen=True)
class RenderContext:
    """What a renderer may need besides the report."""

    #: The ledger as GitHub and SARIF name it (relative to the workspace when inside it).
    ledger_file: str
    #: Reads the pins' history from git, only when a renderer asks for it.
    history: Callable[[], History] = lambda: None


@dataclass(frozen=True)
class Rendered:
    """One file an output writes: ``what`` names it in a warning (``the SARIF report``)."""

    what: str
    path: Path
    text: str


Renderer = Callable[["ReportDict", Path, RenderContext], list[Rendered]]


@dataclass(frozen=True)
class Output:
    """One report file a run can write."""

    name: str
    #: The help of its option, an imperative (``write a SARIF report``).
    help: str
    renderer: Renderer
    #: ``toll merge`` writes it too, from the merged report of a split suite.
    on_merge: bool

    @property
    def flag(self) -> str:
        return f"--toll-{self.name}"

    @property
    def ini_name(self) -> str:
        return f"toll_{self.name}"


# --- the renderers ----------------------------------------------------------------------


def render_json(report: ReportDict, path: Path, context: RenderContext) -> list[Rendered]:
    from pytest_toll.core.inert import inert_lines

    # Valid JSON with the same data, but no raw NEL, line separator or bidi control in a
    # name: a viewer or a log that shows the file breaks or reorders no line on them.
    text = inert_lines(json.dumps(report, indent=2, ensure_ascii=False)) + "\n"
    return [Rendered("the JSON report", path, text)]


def render_markdown(report: ReportDict, path: Path, context: RenderContext) -> list[Rendered]:
    from pytest_toll.report import markdown

    return [
        Rendered("the Markdown report", path, markdown.render(report, markdown.COMMENT_LIMIT_BYTES))
    ]


def render_badge(report: ReportDict, path: Path, context: RenderContext) -> list[Rendered]:
    """The SVG at ``path`` and the shields.io endpoint JSON beside it (``path`` may name
    either)."""
    from pytest_toll.report.badge import badge_for

    made = badge_for(report)
    svg_path = path.with_suffix(".svg") if path.suffix == ".json" else path
    json_path = svg_path.with_suffix(".json")
    return [
        Rendered("the badge", svg_path, made.svg()),
        Rendered("the badge endpoint", json_path, json.dumps(made.endpoint(), indent=2) + "\n"),
    ]


def render_sarif(report: ReportDict, path: Path, context: RenderContext) -> list[Rendered]:
    from pytest_toll.report import sarif

    log = sarif.render(report, context.ledger_file)
    return [Rendered("the SARIF report", path, json.dumps(log, indent=2) + "\n")]


def render_html(report: ReportDict, path: Path, context: RenderContext) -> list[Rendered]:
    from pytest_toll.report import html

    page = html.render_page(
        f"toll report: {report.get('ledger')}", session=report, trend=context.history()
    )
    return [Rendered("the HTML page", path, page)]


#: Every report file, in the order they are written and listed.
OUTPUTS: dict[str, Output] = {
    output.name: output
    for output in (
        Output("json", "write the versioned JSON report", render_json, on_merge=True),
        Output("markdown", "write a Markdown report", render_markdown, on_merge=True),
        Output("badge", "write a badge (SVG, and JSON beside)", render_badge, on_merge=True),
        Output("sarif", "write a SARIF report", render_sarif, on_merge=True),
        Output(
            "html",
            "write one self-contained HTML page (charts, trends)",
            render_html,
            on_merge=False,
        ),
    )
}


# --- writing ----------------------------------------------------------------------------


def write_outputs(
    report: ReportDict,
    paths: Mapping[str, Path],
    *,
    github: bool,
    ledger_path: Path,
    warn: Callable[[str], None],
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    history: Callable[[], History] = lambda: None,
) -> None:
    """Write the outputs ``paths`` names (by row name); with ``github``, the annotations
    (to ``stream``, default standard output) and the step summary."""
    from pytest_toll.core.secrets import scrub, scrub_data
    from pytest_toll.core.textio import write_atomically
    from pytest_toll.report.github import workspace_path

    report = scrub_data(report)
    env = os.environ if environ is None else environ
    context = RenderContext(workspace_path(ledger_path, env), history)
    unknown = sorted(set(paths) - set(OUTPUTS))
    if unknown:
        raise ValueError(f"not outputs: {', '.join(unknown)} (the outputs: {', '.join(OUTPUTS)})")
    for output in OUTPUTS.values():
        path = paths.get(output.name)
        if path is None:
            continue
        for rendered in output.renderer(report, path, context):
            try:
                rendered.path.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(rendered.path, scrub(rendered.text))
            except OSError as error:
                warn(
                    f"pytest-toll: could not write {rendered.what} {rendered.path}: "
                    f"{error.strerror or error}"
                )
    if github:
        from pytest_toll.report.github_run import write_github

        write_github(report, ledger_path, warn=warn, stream=stream, environ=env)
