"""One self-contained HTML page from report data: what changed first, then where tokens go.

Input is plain data — a session report's ``as_dict()``, ``toll weigh``'s ``ToolsReport``
as a dict, a skills report, a scan (tolls) report, a trend report — and the output is one
page with no network and no external asset: inline CSS, inline SVG charts that read with
scripts disabled, and a few lines of inline script that only sort tables. A strict
Content-Security-Policy in the page refuses any load a future edit might add. Every text
from the data is HTML-escaped.

Sections, in order: what regressed or improved in this run and why each entry failed or
warned (or, for a verb's page, the findings), the fixed
cost per request against the window, a treemap of each server's tools, each skill's three
levels, the tests and calls against pin and budget, transcript shapes, pin trends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_toll._version import __version__
from pytest_toll.core.kinds import fixed_cost_label
from pytest_toll.report.data import entry_label, tally_of
from pytest_toll.report.host_costs import fixed_cost_subject
from pytest_toll.report.html_findings import findings_section, session_findings_section
from pytest_toll.report.svg import (
    BAD,
    GOOD,
    LEVEL_COLOURS,
    NEUTRAL,
    Tile,
    esc,
    line_chart,
    measured_bar,
    number,
    signed,
    stacked_bar,
    treemap,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
LEVELS = ("metadata", "body", "references")
_FAILING = ("regressed", "over_budget", "error")
_OUTCOME_COLOUR = {
    "regressed": BAD,
    "over_budget": BAD,
    "error": BAD,
    "improved": GOOD,
    "new": "#b5762d",
    "stale": "#b5762d",
    "passed": "#3b6ea8",
}

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1100px;padding:16px;color:#1c2529;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .4em;
border-bottom:1px solid #cfd8dc}h3{font-size:1em;margin:1em 0 .3em}
.meta{color:#546e7a;font-size:.9em}
svg.chart{width:100%;height:auto;display:block;margin:4px 0}
svg.bar{max-width:900px}svg text{font-family:inherit}
.wrap{overflow-x:auto}
table{border-collapse:collapse;font-size:.9em;margin:.4em 0}
th,td{padding:3px 8px;border-bottom:1px solid #eceff1;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th{cursor:pointer;background:#f5f7f8}
ul.changes{padding-left:1.2em}ul.changes li{margin:.2em 0}
.bad{color:#c62828;font-weight:bold}.good{color:#2e7d32;font-weight:bold}
.warn{color:#8d5a00;font-weight:bold}
.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}
.sparks{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:8px}
@media (max-width:600px){body{padding:8px;font-size:14px}th,td{padding:2px 4px}}
"""

# Sorts a table by the clicked column; numbers as numbers. The page reads fine without it.
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, column) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var down = th.dataset.down !== "1";
    th.dataset.down = down ? "1" : "0";
    function key(row) {
      var text = row.cells[th.cellIndex].textContent.replace(/[,+ ]/g, "");
      var value = parseFloat(text);
      return isNaN(value) ? text : value;
    }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      return (x > y ? 1 : x < y ? -1 : 0) * (down ? -1 : 1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""


def table(header: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[bool]) -> str:
    """A sortable table; ``numeric`` right-aligns a column."""
    head = "".join(
        f'<th class="n">{esc(cell)}</th>' if right else f"<th>{esc(cell)}</th>"
        for cell, right in zip(header, numeric)
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="n">{esc(cell)}</td>' if right else f"<td>{esc(cell)}</td>"
            for cell, right in zip(row, numeric)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="wrap"><table class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


# --- sections ---------------------------------------------------------------------------


def changes_section(session: Mapping[str, Any]) -> str:
    """What this run changed, worst first: failing entries, then improved, new and stale."""
    entries = list(session.get("entries", []))
    failing = [entry for entry in entries if entry.get("failed")]
    failing.sort(
        key=lambda entry: _FAILING.index(entry["outcome"]) if entry["outcome"] in _FAILING else 3
    )
    improved = [e for e in entries if e.get("outcome") == "improved" and not e.get("failed")]
    new = [e for e in entries if e.get("outcome") in ("new", "stale") and not e.get("failed")]
    items = []
    for entry in failing:
        what = str(entry.get("outcome", "")).replace("_", " ")
        reason = entry.get("message") or what
        items.append(
            f'<li><span class="bad">{esc(what.upper() if what != "passed" else "FAILED")}</span> '
            f"<b>{esc(entry_label(entry))}</b>: {esc(reason)} "
            f"({esc(number(entry.get('pin')))} → {esc(number(entry.get('measured')))}, "
            f"{esc(signed(entry.get('delta')))})</li>"
        )
        changed = sorted(
            (part for part in entry.get("parts", []) if part.get("delta")),
            key=lambda part: -abs(part["delta"]),
        )
        for part in changed[:5]:
            items.append(
                f"<li>&nbsp;&nbsp;{esc(part['name'])}: {esc(number(part.get('pin')))} → "
                f"{esc(number(part.get('measured')))} ({esc(signed(part['delta']))})</li>"
            )
    for entry in improved:
        items.append(
            f'<li><span class="good">improved</span> <b>{esc(entry_label(entry))}</b>: '
            f"{esc(number(entry.get('pin')))} → {esc(number(entry.get('measured')))} "
            f"({esc(signed(entry.get('delta')))}) — ratchet with --toll-update</li>"
        )
    for entry in new:
        items.append(
            f'<li><span class="warn">{esc(entry.get("outcome"))}</span> '
            f"<b>{esc(entry_label(entry))}</b>: measured {esc(number(entry.get('measured')))}"
            f"{' — ' + esc(entry['message']) if entry.get('message') else ''}</li>"
        )
    if not items:
        items.append(
            '<li><span class="good">nothing changed</span>: every measured entry equals its pin'
            "</li>"
        )
    verdict = (
        '<span class="bad">FAILED</span>'
        if session.get("failed")
        else ('<span class="good">passed</span>')
    )
    return (
        f"<h2>What changed in this run</h2><p>{verdict} — {esc(tally_of(session))}</p>"
        f'<ul class="changes">{"".join(items)}</ul>'
    )


def window_section(tokens: int, window: int, what: str) -> str:
    """The fixed cost per request as a share of the window: a bar, never a grade."""
    share = tokens / window if window else 0.0
    width = 640
    filled = max(1.0, (width - 2) * min(share, 1.0))
    caption = f"{tokens:,} tok of a {window:,}-token window (~{share:.2%}); {what}"
    return (
        "<h2>Fixed cost per request</h2>"
        f'<svg class="chart bar" viewBox="0 0 {width} 30" role="img" aria-label="{esc(caption)}">'
        f'<rect x="1" y="4" width="{width - 2}" height="22" fill="#eceff1" stroke="#90a4ae"/>'
        f'<rect x="1" y="4" width="{filled:.1f}" height="22" fill="#3b6ea8">'
        f"<title>{esc(caption)}</title></rect></svg>"
        f"<p>{esc(caption)} — shown, never graded.</p>"
    )


def _split(description: float | None, schema: float | None, output_schema: float | None) -> str:
    """A tool's tokens by part, as its treemap tooltip says it."""
    return (
        f"description {number(description)}, schema {number(schema)}, "
        f"output schema {number(output_schema)}"
    )


SPLIT_HEADER = ("description", "schema", "output schema")


def session_servers(session: Mapping[str, Any]) -> str:
    out = []
    for index, entry in enumerate(session.get("entries", [])):
        if entry.get("kind") != "servers":
            continue
        parts = entry.get("parts", [])
        # The per-tool split, when the report carries it (older reports do not).
        split: Mapping[str, Mapping[str, int]] = (entry.get("detail") or {}).get("tools") or {}
        tiles = []
        for part in parts:
            tooltip = (
                f"{part['name']}: {number(part.get('measured'))} tok "
                f"(pin {number(part.get('pin'))}, change {signed(part.get('delta'))})"
            )
            if part["name"] in split:
                tool = split[part["name"]]
                tooltip += " — " + _split(
                    tool.get("description"), tool.get("schema"), tool.get("output_schema")
                )
            tiles.append(Tile(str(part["name"]), float(part.get("measured") or 0), tooltip))
        total = entry.get("measured")
        out.append(
            f"<h3>{esc(entry['name'])} — {esc(number(total))} tok "
            f"({esc(entry.get('method') or 'o200k')}, claude serialization)</h3>"
        )
        out.append(treemap(tiles, f"tools of {entry['name']} by claude tokens", f"s{index}"))
        rows: list[Sequence[object]] = []
        for part in sorted(parts, key=lambda part: -(part.get("measured") or 0)):
            row: list[object] = [
                part["name"],
                number(part.get("measured")),
                number(part.get("pin")),
                signed(part.get("delta")),
            ]
            if split:
                tool = split.get(part["name"], {})
                row.extend(
                    number(tool.get(key)) for key in ("description", "schema", "output_schema")
                )
            rows.append(row)
        header = ("tool", "tokens", "pin", "change", *(SPLIT_HEADER if split else ()))
        out.append(table(header, rows, (False, *(True,) * (len(header) - 1))))
    return "<h2>Servers: tools by claude tokens</h2>" + "".join(out) if out else ""


def tools_servers(reports: Sequence[Mapping[str, Any]]) -> str:
    out = []
    for index, report in enumerate(reports):
        rows = report.get("tools", [])
        method = report.get("method", "o200k")
        tiles = [
            Tile(
                str(row["name"]),
                float(row.get("tokens", 0)),
                f"{row['name']}: {number(row.get('tokens'))} tok — "
                + _split(
                    row.get("description_tokens"),
                    row.get("schema_tokens"),
                    row.get("output_schema_tokens"),
                ),
            )
            for row in rows
        ]
        totals = report.get("totals", {})
        out.append(
            f"<h3>{esc(report.get('target', 'tools'))} — {esc(number(totals.get('claude')))} tok "
            f"({esc(method)}, claude serialization)</h3>"
        )
        out.append(treemap(tiles, f"tools of {report.get('target')} by claude tokens", f"t{index}"))
        table_rows: list[Sequence[object]] = [
            (
                row["name"],
                number(row.get("tokens")),
                number(row.get("description_tokens")),
                number(row.get("schema_tokens")),
                number(row.get("output_schema_tokens")),
            )
            for row in sorted(rows, key=lambda row: -row.get("tokens", 0))
        ]
        table_rows.append(
            ("(framing: <functions> wrapper)", number(report.get("framing")), "", "", "")
        )
        if report.get("instructions") is not None:
            table_rows.append(
                (
                    "(server instructions, beside the tools)",
                    number(report["instructions"]),
                    "",
                    "",
                    "",
                )
            )
        out.append(
            table(
                ("tool", "tokens", *SPLIT_HEADER),
                table_rows,
                (False, True, True, True, True),
            )
        )
        out.append(
            f'<p class="meta">claude {esc(number(totals.get("claude")))} · openai '
            f"{esc(number(totals.get('openai')))} · raw {esc(number(totals.get('raw')))} ({esc(method)})</p>"
        )
    return "<h2>Servers: tools by claude tokens</h2>" + "".join(out) if out else ""


def _legend() -> str:
    return (
        '<p class="legend">'
        + "".join(
            f'<span><i style="background:{colour}"></i>{esc(level)}</span>'
            for level, colour in LEVEL_COLOURS.items()
        )
        + "</p>"
    )


def skills_section(levels_by_skill: Sequence[tuple[str, Mapping[str, float]]]) -> str:
    """Each skill's three levels: metadata (always loaded), body, references (on demand)."""
    if not levels_by_skill:
        return ""
    scale = max(sum(levels.values()) for _, levels in levels_by_skill) or 1
    bars = [
        stacked_bar(
            name,
            [(level, float(levels.get(level, 0)), LEVEL_COLOURS[level]) for level in LEVELS],
            scale,
        )
        for name, levels in levels_by_skill
    ]
    rows = [
        (name, *(number(levels.get(level)) for level in LEVELS)) for name, levels in levels_by_skill
    ]
    executed = [
        (name, levels["executed"]) for name, levels in levels_by_skill if "executed" in levels
    ]
    scripts = (
        "<p>executed — scripts a skill runs; their output enters the context, their source is "
        "not loaded: "
        + esc(", ".join(f"{name} {number(value)}" for name, value in executed))
        + " tok of source</p>"
        if executed
        else ""
    )
    return (
        "<h2>Skills at their three loading levels</h2>"
        "<p>metadata is loaded on every request; the body on activation; references on demand.</p>"
        + _legend()
        + "".join(bars)
        + table(("skill", *LEVELS), rows, (False, True, True, True))
        + scripts
    )


def session_skills(session: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    return [
        (
            str(entry["name"]),
            {str(part["name"]): part.get("measured") or 0 for part in entry.get("parts", [])},
        )
        for entry in session.get("entries", [])
        if entry.get("kind") == "skills"
    ]


def report_skills(report: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    return [
        (
            str(skill["name"]),
            {
                "metadata": skill.get("metadata", 0),
                "body": skill.get("body", 0),
                "references": skill.get("references_total", 0),
                **({"executed": skill["executed_total"]} if "executed_total" in skill else {}),
            },
        )
        for skill in report.get("skills", [])
    ]


def budgets_section(session: Mapping[str, Any]) -> str:
    """Tests and calls: the measured total against the pin (dashed) and budget (red)."""
    entries = [e for e in session.get("entries", []) if e.get("kind") in ("tests", "calls")]
    if not entries:
        return ""
    bars = [
        measured_bar(
            entry_label(entry),
            entry.get("measured"),
            entry.get("pin"),
            entry.get("budget"),
            _OUTCOME_COLOUR.get(str(entry.get("outcome")), NEUTRAL),
        )
        for entry in entries
    ]
    rows = [
        (
            entry_label(entry),
            number(entry.get("measured")),
            number(entry.get("pin")),
            number(entry.get("budget")),
            signed(entry.get("delta")),
            str(entry.get("outcome", "")).replace("_", " "),
        )
        for entry in entries
    ]
    return (
        "<h2>Tests and calls against pin and budget</h2>"
        "<p>bar: measured · dashed line: pin · red line: budget (o200k tokens)</p>"
        + "".join(bars)
        + table(
            ("entry", "measured", "pin", "budget", "change", "outcome"),
            rows,
            (False, True, True, True, True, False),
        )
    )


def session_transcripts(session: Mapping[str, Any]) -> str:
    rows = []
    shapes = ""
    for entry in session.get("entries", []):
        if entry.get("kind") != "transcripts":
            continue
        rows.append(("ok tokens from tool results", number(entry.get("measured")), "-"))
        for other in entry.get("other_pins", []):
            rows.append(
                (other.get("key", ""), number(other.get("measured")), number(other.get("pin")))
            )
        detail = entry.get("detail")
        if detail and detail.get("shapes") is not None:
            # The waste ratio is in the table above, beside its pin.
            shapes += shapes_section(detail)
    if not rows:
        return ""
    pointer = "" if shapes else "; per-shape detail: <code>toll scan --html PAGE</code>"
    return (
        f"<h2>Transcripts</h2><p>tokens tool results put in context (o200k){pointer}</p>"
        + table(("what", "measured", "pin"), rows, (False, True, True))
        + shapes
    )


def shapes_section(scan: Mapping[str, Any], top: int = 25) -> str:
    """Transcript shapes by ok tokens, with calls and outcomes."""
    shapes = list(scan.get("shapes", []))[:top]
    if not shapes:
        return "<h2>Transcript shapes</h2><p>no tool calls found</p>"
    scale = max(float(shape.get("ok_tokens", 0)) for shape in shapes) or 1.0
    bars = [
        stacked_bar(
            str(shape["shape"]),
            [
                (
                    "ok tokens",
                    float(shape.get("ok_tokens", 0)),
                    BAD if shape.get("suspicious") else "#3f8f96",
                )
            ],
            scale,
        )
        for shape in shapes
    ]
    rows = [
        (
            shape["shape"],
            number(shape.get("calls")),
            number(shape.get("ok")),
            number(shape.get("ok_tokens")),
            number(shape.get("median")),
            number(shape.get("p90")),
            " ".join(f"{name}={count}" for name, count in shape.get("by_outcome", {}).items()),
            "suspicious: mostly not ok" if shape.get("suspicious") else "",
        )
        for shape in shapes
    ]
    summary = (
        f"{number(scan.get('calls'))} tool calls in {number(scan.get('sessions'))} sessions; "
        f"only ok results are ranked (o200k)"
    )
    if scan.get("waste_ratio") is not None:
        summary += f"; waste ratio {float(scan['waste_ratio']):.2%} of ok tokens fetched again"
    return (
        f"<h2>Transcript shapes</h2><p>{esc(summary)}</p>"
        + "".join(bars)
        + table(
            ("shape", "calls", "ok", "ok tokens", "median", "p90", "outcomes", ""),
            rows,
            (False, True, True, True, True, True, False, False),
        )
    )


def trend_section(trend: Mapping[str, Any]) -> str:
    entries: Mapping[str, Sequence[Mapping[str, Any]]] = trend.get("entries", {})
    if not entries:
        return ""
    charts = [
        line_chart(label, [(str(point["date"])[:10], point["pin"]) for point in points])
        for label, points in entries.items()
        if points
    ]
    skipped = int(trend.get("skipped", 0))
    note = (
        f" ({skipped} commit{'' if skipped == 1 else 's'} whose ledger does not load skipped)"
        if skipped
        else ""
    )
    return (
        f"<h2>Pin trends</h2><p>every pin as each commit to the ledger left it, oldest first"
        f'{esc(note)}</p><div class="sparks">{"".join(charts)}</div>'
    )


# --- the page ---------------------------------------------------------------------------


def render_page(
    title: str,
    *,
    session: Mapping[str, Any] | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    skills: Mapping[str, Any] | None = None,
    scan: Mapping[str, Any] | None = None,
    trend: Mapping[str, Any] | None = None,
    window: int | None = None,
) -> str:
    """The whole page from whichever reports are given (each as its ``as_dict()``)."""
    sections: list[str] = []
    if session is not None:
        sections.append(changes_section(session))
        sections.append(session_findings_section(session))
        fixed = session.get("fixed_cost", {})
        kinds = (entry.get("kind", "") for entry in session.get("entries") or [])
        size = int(session.get("window") or window or 1)
        # One host's figure where the ledger has hosts: entries: the label names it.
        label = f"{fixed_cost_subject(fixed, fixed_cost_label(kinds))}, o200k"
        sections.append(window_section(int(fixed.get("tokens", 0)), size, label))
        sections.append(session_servers(session))
        sections.append(skills_section(session_skills(session)))
        sections.append(budgets_section(session))
        sections.append(session_transcripts(session))
    findings: list[Mapping[str, Any]] = []
    for report in tools:
        findings.extend(report.get("findings", []))
    if skills is not None:
        findings.extend(skills.get("findings", []))
    if session is None and (tools or skills is not None):
        sections.append(findings_section(findings, table))
        fixed_tokens = sum(
            int(report.get("totals", {}).get("claude", 0)) + int(report.get("instructions") or 0)
            for report in tools
        )
        if skills is not None:
            fixed_tokens += int(skills.get("totals", {}).get("metadata", 0))
        size = window or next(
            (int(report.get("window", {}).get("size", 0)) for report in tools), 1_000_000
        )
        sections.append(
            window_section(fixed_tokens, size, "tool definitions + instructions + skill metadata")
        )
    sections.append(tools_servers(tools))
    if skills is not None:
        sections.append(skills_section(report_skills(skills)))
    if scan is not None:
        sections.append(shapes_section(scan))
    if trend is not None:
        sections.append(trend_section(trend))
    source = f"pytest-toll {__version__} · tokenizer o200k_base"
    if session is not None:
        source += f" · ledger {session.get('ledger')}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{esc(title)}</h1><p class="meta">{esc(source)}</p>'
        + "".join(section for section in sections if section)
        + f"<script>{SCRIPT}</script></body></html>\n"
    )
