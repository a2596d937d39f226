"""Call outcomes: what came back from one tool call, judged from its result alone (not a
ledger entry's outcome in a report: passed, regressed…).

``ok`` (text or images came back), ``error`` (the tool said it failed), ``empty`` (nothing
came back), ``truncated`` (the tool cut its output short), ``opaque`` (structured blocks with
no text or image — not a failure, not ranked), ``unpaired`` (a call whose result never
appears — never free, never ranked) and ``result not recorded`` (a call in a format that
does not write results, Cursor's: counted, never called unpaired, never ranked). Only ``ok``
tolls are ranked.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pytest_toll.transcripts.records import ResultRecord

CallOutcome = Literal[
    "ok", "error", "empty", "truncated", "opaque", "unpaired", "result not recorded"
]

OUTCOME_OK: Final = "ok"
#: The tool said it failed (not a finding's severity, not an exit code).
OUTCOME_ERROR: Final = "error"
OUTCOME_EMPTY: Final = "empty"
OUTCOME_TRUNCATED: Final = "truncated"
OUTCOME_OPAQUE: Final = "opaque"
OUTCOME_UNPAIRED: Final = "unpaired"
#: The format keeps calls but not what they returned (Cursor): nothing went missing.
OUTCOME_NOT_RECORDED: Final = "result not recorded"
#: Every outcome, in the order reports list them.
OUTCOMES: tuple[CallOutcome, ...] = (
    OUTCOME_OK,
    OUTCOME_ERROR,
    OUTCOME_EMPTY,
    OUTCOME_TRUNCATED,
    OUTCOME_OPAQUE,
    OUTCOME_UNPAIRED,
    OUTCOME_NOT_RECORDED,
)
#: Outcomes that say something about the tool; opaque, unpaired and not recorded are not.
JUDGED: tuple[CallOutcome, ...] = (OUTCOME_OK, OUTCOME_ERROR, OUTCOME_EMPTY, OUTCOME_TRUNCATED)

# Markers tools print when they cut output short (Claude Code, Codex, common MCP servers);
# looked for only near the ends, where tools put them, so file contents rarely match.
_TRUNCATED = re.compile(
    r"\d+ (?:lines|characters|chars|bytes|tokens) truncated"
    r"|\[(?:output )?truncated|<response clipped>|output too large"
    r"|\[\.\.\. ?omitted \d+ of \d+ lines|^Total output lines: \d+|\(truncated\)"
    r"|\.\.\. \(\d+ more (?:lines|characters)\)|<truncated \d+ (?:lines|characters|bytes)>",
    re.IGNORECASE | re.MULTILINE,
)
_MARKER_WINDOW = 800


def outcome_of(result: ResultRecord) -> CallOutcome:
    if result.is_error or result.text.startswith("<tool_use_error>"):
        return OUTCOME_ERROR
    text = result.text
    if text and not text.isspace():
        ends = (
            text
            if len(text) <= 2 * _MARKER_WINDOW
            else text[:_MARKER_WINDOW] + "\n" + text[-_MARKER_WINDOW:]
        )
        lowered = ends.lower()
        # The regex is costly next to tokenizing, and most results hold none of the words its
        # markers share (spelled out: a generator over them measured half this check's time).
        if not (
            "truncat" in lowered
            or "clipped" in lowered
            or "too large" in lowered
            or "omitted" in lowered
            or "total output" in lowered
            or " more " in lowered
        ):
            return OUTCOME_OK
        return OUTCOME_TRUNCATED if _TRUNCATED.search(ends) else OUTCOME_OK
    if result.images:
        return OUTCOME_OK
    return OUTCOME_OPAQUE if result.opaque_blocks else OUTCOME_EMPTY
