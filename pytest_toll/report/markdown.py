"""The session report as GitHub-flavoured Markdown: the step summary and ``--toll-markdown``.

Built from ``SessionReport.as_dict()`` (schema: ``data/report.schema.json``) only. Rows go
worst first, so when the text must be cut to fit a size limit (1 MiB for a step summary,
65,536 characters for a pull-request comment) what is cut is the least interesting, and a
line says how much was left out.

Every string that came from a user's files (entry names, tool names, rule messages) is
escaped: a tool description is untrusted text and must not become a link, an image, HTML or
an @-mention in a pull request. GitHub's renderer (cmark-gfm with its autolink extension)
also links a bare ``https://…``, ``www.…`` or ``name@host`` in plain text; a backslash before
the ``:`` of ``://`` and the ``.`` after ``www`` (shown as nothing) and a word joiner after
``@`` stop that, and the text reads the same. ``tests/faults/test_markdown_links.py`` checks
it with cmark-gfm itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_toll.core.inert import shown
from pytest_toll.core.kinds import fixed_cost_label
from pytest_toll.core.secrets import scrub
from pytest_toll.report.data import (
    EntryDict,
    ReportDict,
    biggest_changes,
    entry_label,
    fixed_cost_gaps,
    tally_of,
)
from pytest_toll.report.host_costs import deferral_notes, fixed_cost_subject, other_hosts

#: A pull-request or issue comment body may hold at most this many characters; a byte count
#: of UTF-8 is never smaller than the character count, so a byte budget this size is safe.
COMMENT_LIMIT_BYTES = 65_536

_OUTCOME_RANK = {
    "error": 0,
    "over_budget": 1,
    "regressed": 2,
    "stale": 3,
    "improved": 4,
    "new": 5,
    "passed": 6,
}
_OUTCOME_LABEL = {
    "passed": "✅ ok",
    "improved": "⬇️ improved",
    "regressed": "❌ regressed",
    "over_budget": "❌ over budget",
    "error": "❌ error",
    "new": "🆕 new",
    "stale": "⚠️ stale",
}
_SEVERITY_LABEL = {"error": "❌ error", "warn": "⚠️ warn", "info": "ℹ️ info"}
_SEVERITY_RANK = {"error": 0, "warn": 1, "info": 2}
# GFM treats a backslash before any ASCII punctuation as a literal; these are the ones that
# can start markup (emphasis, links, images, HTML, tables, headings, strike-through).
_MARKUP = set("\\`*_[]<>|~#&!")
_WORD_JOINER = "\u2060"
_UPDATE_COMMAND = "`pytest --toll --toll-update`"


#: What cmark-gfm's autolink extension starts a link at: a scheme's ``://`` (``http``,
#: ``HTTPS``, ``ftp``…) and ``www.`` (any case).
_URL_COLON = re.compile(r"(?<=[A-Za-z0-9]):(?=//)")
_WWW_DOT = re.compile(r"(?i)(?<=www)\.")


def text(value: object) -> str:
    """Plain text that renders as itself inside a Markdown paragraph or table cell: no
    markup, no link, no mention, no control or bidi character (:func:`shown`)."""
    raw = shown(" ".join(scrub(str(value)).split()))  # newlines would end a table row
    escaped = "".join("\\" + char if char in _MARKUP else char for char in raw)
    escaped = _WWW_DOT.sub(r"\.", _URL_COLON.sub(r"\:", escaped))
    # A word joiner after @ keeps "@org/team" in a tool description from pinging anyone, and
    # "name@host.example" from becoming a mailto link.
    return escaped.replace("@", "@" + _WORD_JOINER)


def number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def signed(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value:+,}" if value else "0"


#: The parts of a captured request, in the order ``toll measure`` shows them.
_REQUEST_PARTS = ("messages", "system", "skills", "tools")


def capture_line(capture: Mapping[str, Any]) -> str:
    """What a test captured in a line: the graded largest request, then the run (the sum,
    how much of it was resent) and, when requests mark cache breakpoints, the estimate."""
    count = int(capture.get("count", 0))
    if not count:
        return "captured no LLM request"
    largest = capture.get("largest")
    head = (
        f"largest request #{capture.get('largest_number')}: {number(largest)} o200k"
        if largest is not None
        else "no request could be judged"
    )
    unjudged = int(capture.get("could_not_judge", 0))
    tail = f", {unjudged} could not judge" if unjudged else ""
    resent = capture.get("resent")
    if resent:
        tail = f", {number(resent)} of it resent{tail}"
    plural = "request" if count == 1 else "requests"
    line = f"{head} (sum {number(capture.get('sum'))} over {count} {plural}{tail})"
    cache = capture.get("cache")
    return f"{line}; {cache_text(cache)}" if isinstance(cache, Mapping) else line


def cache_text(cache: Mapping[str, Any]) -> str:
    """The run's caching estimate in a few words, labelled an estimate: the write duration
    it priced, and why a prefix was not cached (below the model's minimum) when one was not."""
    notes = [str(text) for text in cache.get("below_minimum", ())]
    unknown = cache.get("minimum_unknown")
    if unknown:
        notes.append(
            f"no minimum cacheable length known for {', '.join(map(str, unknown))}: "
            "estimated without one"
        )
    tail = f" ({'; '.join(notes)})" if notes else ""
    if "cached_usd" not in cache:
        return f"caching estimate: no USD ({cache.get('reason', '')}){tail}"
    duration = cache.get("write_duration")
    writes = f", writes at the {duration} price" if duration and duration != "none written" else ""
    return (
        f"estimated with prompt caching ${cache['cached_usd']:,.6f} vs "
        f"${cache['uncached_usd']:,.6f} uncached{writes} (an estimate, not a measurement){tail}"
    )


def request_line(request: Mapping[str, Any]) -> str:
    """One captured request in a line: which, where to, and what it measured (or why not)."""
    model = f" {request['model']}" if request.get("model") else ""
    stream = " (stream)" if request.get("stream") else ""
    where = (
        f"#{request.get('number')} {request.get('api')}{model}{stream} "
        f"{request.get('host')}{request.get('path')}"
    )
    if request.get("tokens") is None:
        return f"{where}: could not judge: {request.get('error', '')}"
    scaled = request.get("scaled")
    scaled_text = f", {scaled:,} {request.get('scaled_method')}" if scaled is not None else ""
    cost = request.get("cost_usd")
    usd = f", ${cost:,.6f}" if cost is not None else ""
    parts = request.get("parts") or {}
    split = ", ".join(f"{name} {parts[name]:,}" for name in _REQUEST_PARTS if name in parts)
    prefix = request.get("cacheable_prefix")
    cacheable = f"; cacheable prefix {prefix:,} o200k" if prefix is not None else ""
    added = request.get("new")
    # The first request is all new; later ones show what they added to the one before.
    new = f", +{added:,} new" if added is not None and added != request["tokens"] else ""
    return f"{where}: {request['tokens']:,} o200k{scaled_text}{usd} ({split}){new}{cacheable}"


def capture_lines(entry: EntryDict) -> list[str]:
    """A bullet for a test that captured, and one sub-bullet per request (Markdown)."""
    capture = entry.get("capture")
    if capture is None:
        return []
    lines = [f"- **{text(entry_label(entry))}**: {text(capture_line(capture))}"]
    lines.extend(f"  - {text(request_line(request))}" for request in capture["requests"])
    return lines


def failing_first(entries: Sequence[EntryDict]) -> list[EntryDict]:
    """Failing entries first, then by outcome; report order (kind, ledger line) within."""
    ranked = sorted(
        enumerate(entries),
        key=lambda pair: (
            0 if pair[1].get("failed") else 1,
            _OUTCOME_RANK.get(str(pair[1].get("outcome")), 9),
            pair[0],
        ),
    )
    return [entry for _, entry in ranked]


def headline(report: ReportDict) -> str:
    """``❌ **Gate failed** · 16 entries: 2 failed, 14 passed (12 ok, 2 regressed)``."""
    status = "❌ **Gate failed**" if report.get("failed") else "✅ **Gate passed**"
    entries = report.get("entries") or []
    return f"{status} · {tally_of(report)}" if entries else status


def fixed_cost_line(report: ReportDict) -> str:
    fixed: Mapping[str, Any] = report.get("fixed_cost") or {}
    tokens = int(fixed.get("tokens", 0))
    window = int(report.get("window", 0)) or 1
    share = 100 * tokens / window
    # As the terminal summary shows it: two decimals below 1%, so a small surface is not 0.
    shown = f"{share:.1f}" if share >= 1 else f"{share:.2f}"
    gaps = fixed_cost_gaps(fixed)
    at_least = "≥ " if gaps else ""
    label = fixed_cost_label(entry.get("kind", "") for entry in report.get("entries") or [])
    others = other_hosts(fixed)
    return (
        f"Fixed cost per request ({text(fixed_cost_subject(fixed, label))}): "
        f"**{at_least}{tokens:,} tok (o200k)**, ~{shown}% of a {window:,}-token window"
        + (f" ({text(gaps)})" if gaps else "")
        + (f"; other hosts, each its own: {text(others)}." if others else ".")
        + "".join(f"\n\n> {text(note)}" for note in deferral_notes(fixed))
    )


def usd(value: float, *, sign: bool = False) -> str:
    """Dollars as a person reads them: cents from a cent up (``$1.03``), two significant
    digits below (``$0.0043``), so a small figure is never shown as ``$0.00``."""
    size = abs(value)
    if size == 0:
        shown = "0.00"
    elif size >= 0.01:
        shown = f"{size:,.2f}"
    else:
        shown = f"{float(f'{size:.2g}'):f}".rstrip("0")
    prefix = ("-" if value < 0 else "+") if sign and value else ""
    return f"{prefix}${shown}"


def pricing_line(report: ReportDict) -> str | None:
    """What the fixed cost, and this change of it, cost per 1,000 requests in USD; None
    when the report has no pricing (no ledger model, or no input price for it)."""
    pricing = report.get("pricing")
    if not pricing:
        return None
    price = float(pricing["input_usd_per_mtok"])
    method = str(pricing["method"])
    if not pricing.get("scale_measured", True):
        method += ", scale not measured"
    at_least = "≥ " if fixed_cost_gaps(report.get("fixed_cost") or {}) else ""
    host = (report.get("fixed_cost") or {}).get("host")
    line = (
        f"At {text(pricing['model'])} input prices ({usd(price)}/MTok, {text(method)}): "
        f"**{at_least}{usd(float(pricing['fixed_cost_usd_per_1000']))}** per 1,000 requests"
        + (f" ({text(host)})" if host else "")
    )
    change = pricing.get("change_usd_per_1000")
    if change is not None:
        line += f"; this change: {usd(float(change), sign=True)} per 1,000 requests"
    tokens = int(pricing["fixed_cost_tokens"])
    others = [
        f"{text(name)} {usd(float(value))}"
        for name, value in (pricing.get("hosts") or {}).items()
        if name != host
    ]
    line += f" (uncached input; the fixed cost is {tokens:,} tok {text(method)})"
    return line + (f"; other hosts: {', '.join(others)}." if others else ".")


def change_line(entry: EntryDict, biggest: int = 5) -> str | None:
    """One bullet for an entry whose total or parts moved against the pin, else None."""
    shown, hidden = biggest_changes(entry.get("parts", []), biggest)
    outcome = entry.get("outcome")
    delta = entry.get("delta")
    if not delta and not shown and outcome not in ("new", "stale"):
        return None
    head = f"- **{text(entry_label(entry))}**"
    if outcome == "new":
        head += f": new, {number(entry.get('measured'))} tok — no pin yet"
    elif outcome == "stale":
        head += ": in the ledger but not measured (stale)"
    else:
        head += f": {number(entry.get('pin'))} → {number(entry.get('measured'))} ({signed(delta)})"
    details = [
        f"{text(part['name'])} {number(part.get('pin'))} → {number(part.get('measured'))} "
        f"({signed(part.get('delta'))})"
        for part in shown
    ]
    if hidden:
        details.append(f"{hidden} more")
    if details:
        head += " · " + ", ".join(details)
    ratchet = entry.get("ratchet")
    if ratchet:
        head += f" · pin written: {number(ratchet.get('from'))} → {number(ratchet.get('to'))}"
    elif outcome == "improved":
        head += f" · ratchet with {_UPDATE_COMMAND}"
    return head


def _fit(lines: Sequence[str], room: int) -> tuple[list[str], int]:
    """As many of ``lines`` as fit in ``room`` bytes (each plus a newline), and the bytes used."""
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8")) + 1
        if used + size > room:
            break
        kept.append(line)
        used += size
    return kept, used


def _left_out_note(count: int, nouns: tuple[str, str], limit_bytes: int, more: bool) -> str:
    noun = nouns[0] if count == 1 else nouns[1]
    return (
        f"_{count:,} {'more ' if more else ''}{noun} left out to stay within {limit_bytes:,} "
        "bytes; the terminal summary and `--toll-json` have them all._"
    )


def render(report: ReportDict, limit_bytes: int | None = None) -> str:
    """The report as Markdown, at most ``limit_bytes`` of UTF-8 when given."""
    entries = failing_first(report.get("entries", []))
    head = ["## pytest-toll: context cost", "", headline(report), "", fixed_cost_line(report), ""]
    priced = pricing_line(report)
    if priced is not None:
        head[-1:-1] = ["", priced]
    footer: list[str] = []
    if report.get("partial"):
        footer.append(
            "_Partial run (-k, node ids or --lf): entries that did not run were not judged._"
        )
    if report.get("ledger_written"):
        footer.append(f"Ledger updated: {text(report.get('ledger', 'toll.yaml'))}.")
    improved = [e for e in entries if e.get("outcome") == "improved" and not e.get("ratchet")]
    if improved and not report.get("update"):
        gain = sum(-(entry.get("delta") or 0) for entry in improved)
        footer.append(f"Improved by {gain:,} tok: ratchet with {_UPDATE_COMMAND}.")

    table_head = [
        "| | entry | measured | pin | budget | change | method |",
        "|---|---|--:|--:|--:|--:|---|",
    ]
    rows = [
        f"| {_OUTCOME_LABEL.get(str(entry.get('outcome')), text(entry.get('outcome')))} "
        f"| {text(entry_label(entry))} | {number(entry.get('measured'))} "
        f"| {number(entry.get('pin'))} | {number(entry.get('budget'))} "
        f"| {signed(entry.get('delta'))} | {text(entry.get('method') or '-')} |"
        for entry in entries
    ]
    changes = [line for line in (change_line(entry) for entry in entries) if line]
    captured = [line for entry in entries for line in capture_lines(entry)]
    findings = sorted(
        (
            (_SEVERITY_RANK.get(str(finding.get("severity")), 9), index, entry, finding)
            for index, entry in enumerate(entries)
            for finding in entry.get("findings", [])
        ),
        key=lambda item: (item[0], item[1]),
    )
    finding_rows = [
        f"| {_SEVERITY_LABEL.get(str(finding.get('severity')), text(finding.get('severity')))} "
        f"| {text(finding.get('rule', ''))} | {text(entry_label(entry))} "
        f"| {text(finding.get('subject') or '')} | {text(finding.get('message', ''))}"
        + (f" — {text(finding['hint'])}" if finding.get("hint") else "")
        + " |"
        for _, _, entry, finding in findings
    ]

    sections: list[tuple[list[str], list[str], tuple[str, str]]] = []
    if rows:
        sections.append((table_head, rows, ("entry row", "entry rows")))
    else:
        head.append("No ledger entries or measured tests.")
        head.append("")
    if changes:
        sections.append(
            (
                ["### Changes against the pins", ""],
                changes,
                ("change against the pins", "changes against the pins"),
            )
        )
    # Memory files a host reads only on demand, or never (past a Codex chain's byte limit).
    later = [
        f"- **{text(entry_label(entry))}**: {text(file['path'])} {number(file['tokens'])} "
        f"({text(file['loaded'])})"
        for entry in entries
        for file in (entry.get("detail") or {}).get("files") or []
        if file.get("loaded") != "always-on"
    ]
    if later:
        sections.append(
            (
                ["### Memory files outside the fixed cost", ""],
                later,
                ("memory file", "memory files"),
            )
        )
    if captured:
        sections.append(
            (
                ["### Captured LLM requests", ""],
                captured,
                ("captured-request line", "captured-request lines"),
            )
        )
    if finding_rows:
        sections.append(
            (
                [
                    "### Findings",
                    "",
                    "| severity | rule | entry | subject | message |",
                    "|---|---|---|---|---|",
                ],
                finding_rows,
                ("finding", "findings"),
            )
        )

    if limit_bytes is None:
        out = list(head)
        for section_head, body, _ in sections:
            out += [*section_head, *body, ""]
        out += footer
        return "\n".join(out).rstrip("\n") + "\n"

    # Each cut section gets one note; reserve room for the longest each could need.
    notes = sum(
        len(_left_out_note(len(body), (singular, plural), limit_bytes, False).encode("utf-8")) + 2
        for _, body, (singular, plural) in sections
    )
    fixed = sum(len(line.encode("utf-8")) + 1 for line in [*head, *footer])
    fixed += sum(
        len(line.encode("utf-8")) + 2 for section_head, _, _ in sections for line in section_head
    )
    room = limit_bytes - fixed - notes
    if room < 0:
        # Not even the headline and the notes fit: the headline alone, cut to the limit.
        cut = headline(report).encode("utf-8")[: max(0, limit_bytes - 1)]
        return cut.decode("utf-8", "ignore") + "\n" if limit_bytes > 0 else ""
    out = list(head)
    for section_head, body, (singular, plural) in sections:
        kept, used = _fit(body, room)
        room -= used
        if kept:
            out += [*section_head, *kept]
            if len(kept) < len(body):
                out.append("")
        left_out = len(body) - len(kept)
        if left_out:
            out.append(_left_out_note(left_out, (singular, plural), limit_bytes, bool(kept)))
        out.append("")
    out += footer
    return "\n".join(out).rstrip("\n") + "\n"
