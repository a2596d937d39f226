"""One detector for instruction-injection patterns: text meant to steer the model rather than
describe a tool or a skill (E130 for tool definitions, S105 for skills; info, never graded).

The two rules keep their own pattern sets. They grew apart for reasons that still hold: a
tool description is a sentence or two where phrases like ``you must always`` or ``.env``
are suspicious, while a skill body is a page of instructions to the model where those are
ordinary (``you must always run the tests``, ``copy .env.example``); a union would report
every such skill. So ``find_injections`` is the one detector, and each rule passes its set:
``TOOL_PATTERNS`` (E130) or ``SKILL_PATTERNS`` (S105).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class InjectionPattern:
    """One pattern: what a hit means, and the words one of which must appear (casefolded) for
    the pattern to be worth searching for — a plain substring test that made the scan of a
    200-skill catalogue several times faster than running every pattern over every text. No
    words: always searched."""

    meaning: str
    words: tuple[str, ...]
    regex: re.Pattern[str]


@dataclass(frozen=True)
class InjectionHit:
    """The first match of one pattern in a text: its meaning, the text matched, and the
    1-based line where the match starts."""

    meaning: str
    matched: str
    line: int


def find_injections(text: str, patterns: tuple[InjectionPattern, ...]) -> list[InjectionHit]:
    """The first hit of each pattern in ``text``, in the order of ``patterns``."""
    hits: list[InjectionHit] = []
    folded: str | None = None
    for pattern in patterns:
        if pattern.words:
            if folded is None:
                folded = text.casefold()
            if not any(word in folded for word in pattern.words):
                continue
        match = pattern.regex.search(text)
        if match is not None:
            line = text.count("\n", 0, match.start()) + 1
            hits.append(InjectionHit(pattern.meaning, match.group(0), line))
    return hits


# E130: one alternation, so a hit is the leftmost phrase of any of them, shown as matched.
TOOL_PATTERNS: tuple[InjectionPattern, ...] = (
    InjectionPattern(
        "steers the model",
        (),
        re.compile(
            r"(ignore (all |any )?(previous|prior|above|other) (instructions|prompts|rules)"
            r"|disregard (the |all |any )?(previous|prior|above|system|user)"
            r"|<\s*/?\s*(system|important|instructions?)\s*>"
            r"|\bsystem prompt\b"
            r"|do not (tell|inform|mention (this |it )?to) the user"
            r"|(don't|do not|never) (mention|reveal|disclose)"
            r"|before (using|calling) any other tool"
            r"|always (call|use|run) this tool (first|before)"
            r"|you must (always|never)\b"
            r"|instead of (the user's|any other)"
            r"|\bcredentials?\b.*\b(send|post|upload|include)\b"
            r"|~/\.ssh|id_rsa|\.env\b)",
            re.IGNORECASE,
        ),
    ),
)

# S105: one pattern per meaning, reported by meaning and line.
SKILL_PATTERNS: tuple[InjectionPattern, ...] = (
    InjectionPattern(
        "tells the model to ignore its instructions",
        ("ignore", "disregard", "forget", "override"),
        re.compile(
            r"\b(?:ignore|disregard|forget|override)\b[^\n]{0,40}?"
            r"\b(?:previous|prior|above|earlier|all|system|other|your)\b[^\n]{0,20}?"
            r"\b(?:instructions?|prompts?|rules|guidelines)\b",
            re.IGNORECASE,
        ),
    ),
    InjectionPattern(
        "redefines the model's role",
        ("you are now", "from now on"),
        re.compile(r"\b(?:you are now|from now on,? you)\b", re.IGNORECASE),
    ),
    InjectionPattern(
        "mentions the system prompt", ("system prompt",), re.compile(r"\bsystem prompt\b", re.I)
    ),
    InjectionPattern(
        "contains chat-role markup",
        ("<",),
        re.compile(r"</?(?:system|instructions?)>|<\|im_(?:start|end)\|>", re.IGNORECASE),
    ),
    InjectionPattern(
        "asks to hide something from the user",
        ("do not", "don't", "never"),
        re.compile(
            r"\b(?:do not|don't|never)\b[^\n]{0,30}?\b(?:tell|inform|mention|reveal|show)\b"
            r"[^\n]{0,20}?\buser\b",
            re.IGNORECASE,
        ),
    ),
    InjectionPattern(
        "pipes a download into a shell",
        ("curl", "wget"),
        re.compile(r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:ba|z)?sh\b"),
    ),
    InjectionPattern(
        "contains invisible or direction-changing characters",
        (),
        re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff\U000e0000-\U000e007f]"),
    ),
)
