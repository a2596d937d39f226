"""The S rules: judging measured Agent Skills.

S101 frontmatter against the Agent Skills spec · S102 a thin description, or one that never
says when to use the skill · S103 duplicate names or colliding descriptions across a
catalogue · S104 a level over its token or line limit, or a long body with no references ·
S105 instruction-injection patterns (info, never graded) · S106 a reference that is missing,
escapes the skill folder (``../``, absolute, or a symlink), or is nested too deep; and, as
info, what was named but skipped (a placeholder naming no file, a plugin's file outside the
skill, a link to a sibling skill).

Severities are defaults; ``RuleOverrides`` overrides them per rule and overrides every
threshold below by name (``limits: {skill_body_tokens: 3000}`` in toll.yaml).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from pytest_toll.core.errors import describe_type
from pytest_toll.core.findings import ERROR, INFO, WARN, Finding, RuleOverrides
from pytest_toll.core.injection import SKILL_PATTERNS, find_injections
from pytest_toll.skills.records import SKILL_FILE, Skill

#: The rules this module can report (toll.yaml ``rules:`` accepts exactly these and the others).
RULE_IDS = ("S101", "S102", "S103", "S104", "S105", "S106")

#: Every threshold the S rules read, with its default (named as in ``limits:``).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "skill_name_chars": 64,
    "skill_description_chars": 1024,
    "skill_compatibility_chars": 500,
    "skill_description_min_chars": 40,
    "skill_description_similarity": 0.8,
    "skill_metadata_tokens": 260,
    "skill_body_tokens": 5000,
    "skill_body_lines": 500,
    "skill_body_tokens_without_references": 2000,
    "skill_reference_depth": 1,
}

NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_STRING_FIELDS = ("license", "allowed-tools")

# A description that tells a host *when* to pick the skill: "Use when…", "when the user…",
# "Use for…", "Use before / after / during…", "If the user asks…", "Triggers on…".
SAYS_WHEN = re.compile(
    r"\b(?:when|whenever|use (?:it|this|them|for|to|if|on|with|in|whenever|before|after|"
    r"during|while|once|as soon as)|if (?:the |a )?user|triggers?|triggered|"
    r"invoke[sd]?)\b",
    re.IGNORECASE,
)


def injection_hits(text: str) -> list[tuple[str, int]]:
    """Each S105 injection pattern found in ``text``, with the 1-based line of its first hit."""
    return [(hit.meaning, hit.line) for hit in find_injections(text, SKILL_PATTERNS)]


def check(skills: Sequence[Skill], settings: RuleOverrides) -> list[Finding]:
    """All S findings for a catalogue, turned-off rules left out."""
    subjects = subjects_of(skills)
    findings: list[Finding | None] = []
    for skill, subject in zip(skills, subjects):
        findings.extend(_frontmatter(skill, subject, settings))
        findings.extend(_description(skill, subject, settings))
        findings.extend(_sizes(skill, subject, settings))
        findings.extend(_injections(skill, subject, settings))
        findings.extend(_references(skill, subject, settings))
    findings.extend(_duplicates(skills, subjects, settings))
    return [finding for finding in findings if finding is not None]


def subjects_of(skills: Sequence[Skill]) -> list[str]:
    """What each skill's findings are about: its name, or with its path when the name is
    shared (S103 flags that; the other findings must still say which skill they mean)."""
    names: defaultdict[str, int] = defaultdict(int)
    for skill in skills:
        names[skill.name] += 1
    return [
        skill.name if names[skill.name] == 1 else f"{skill.name} ({skill.path})" for skill in skills
    ]


def _limit(settings: RuleOverrides, name: str) -> float:
    return settings.threshold(name, DEFAULT_THRESHOLDS[name])


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


# --- S101 -------------------------------------------------------------------------------


def _frontmatter(skill: Skill, subject: str, settings: RuleOverrides) -> Iterator[Finding | None]:
    def error(message: str, hint: str = "") -> Finding | None:
        return settings.finding("S101", ERROR, subject, message, hint)

    if skill.frontmatter_problem is not None:
        yield error(skill.frontmatter_problem, "start SKILL.md with ---, name:, description:, ---")
        return
    fields = skill.frontmatter or {}

    name = fields.get("name")
    name_limit = _limit(settings, "skill_name_chars")
    if "name" not in fields:
        yield error("frontmatter has no name")
    elif not isinstance(name, str):
        yield error(f"name must be a string, not {describe_type(name, 'yaml')}")
    else:
        if not NAME_PATTERN.match(name):
            yield error(
                f"name {name!r} must be lowercase letters and digits in hyphen-separated words",
                "match ^[a-z0-9]+(-[a-z0-9]+)*$",
            )
        if len(name) > name_limit:
            yield error(f"name is {len(name):,} characters, over {_number(name_limit)}")
        if name != skill.folder_name:
            yield error(
                f"name {name!r} does not match its folder name {skill.folder_name!r}",
                "hosts find a skill by its folder; rename one to match the other",
            )

    description = fields.get("description")
    description_limit = _limit(settings, "skill_description_chars")
    if "description" not in fields:
        yield error("frontmatter has no description")
    elif not isinstance(description, str):
        yield error(f"description must be a string, not {describe_type(description, 'yaml')}")
    elif not description.strip():
        yield error("description is empty")
    elif len(description) > description_limit:
        yield error(
            f"description is {len(description):,} characters, over {_number(description_limit)}"
        )

    if "compatibility" in fields:
        compatibility = fields["compatibility"]
        compatibility_limit = _limit(settings, "skill_compatibility_chars")
        if not isinstance(compatibility, str):
            yield error(
                f"compatibility must be a string, not {describe_type(compatibility, 'yaml')}"
            )
        elif not compatibility.strip():
            yield error("compatibility is empty (leave it out instead)")
        elif len(compatibility) > compatibility_limit:
            yield error(
                f"compatibility is {len(compatibility):,} characters, "
                f"over {_number(compatibility_limit)}"
            )

    if "metadata" in fields:
        metadata = fields["metadata"]
        if not isinstance(metadata, dict):
            yield error(
                f"metadata must be a mapping of strings to strings, not {describe_type(metadata, 'yaml')}"
            )
        else:
            for key, value in metadata.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    yield error(
                        f"metadata must map strings to strings: {key!r} is {describe_type(value, 'yaml')}",
                        _metadata_hint(key, value),
                    )

    for key in _STRING_FIELDS:
        if key in fields and not isinstance(fields[key], str):
            yield error(f"{key} must be a string, not {describe_type(fields[key], 'yaml')}")


# --- S102 -------------------------------------------------------------------------------


def _description(skill: Skill, subject: str, settings: RuleOverrides) -> Iterator[Finding | None]:
    description = skill.description.strip()
    if not description:
        return  # S101 already says it is missing or empty
    minimum = _limit(settings, "skill_description_min_chars")
    if len(description) < minimum:
        yield settings.finding(
            "S102",
            WARN,
            subject,
            f"description is thin: {len(description):,} characters, under {_number(minimum)}",
            "say what the skill does and when to use it",
        )
    if not SAYS_WHEN.search(description):
        yield settings.finding(
            "S102",
            WARN,
            subject,
            "description never says when to use the skill",
            'add a "Use when …" sentence: a host picks skills by their descriptions',
        )


def _metadata_hint(key: object, value: object) -> str:
    """Quoting fixes a scalar YAML typed (``1.0``, ``yes``, a date); a nested mapping or list
    stays one whatever is quoted inside it, so its hint says what does fix it."""
    if isinstance(value, dict | list):
        return (
            f"metadata holds one level of strings: write {key!r} as one string, or move it "
            "out of metadata"
        )
    return 'quote the value, e.g. version: "1.0"'


# --- S103 -------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text.casefold()))


def _duplicates(
    skills: Sequence[Skill], subjects: Sequence[str], settings: RuleOverrides
) -> Iterator[Finding | None]:
    by_name: defaultdict[str, list[Skill]] = defaultdict(list)
    for skill in skills:
        by_name[skill.name].append(skill)
    for name, group in by_name.items():
        if len(group) > 1:
            paths = ", ".join(skill.path for skill in group)
            yield settings.finding(
                "S103",
                ERROR,
                name,
                f"{len(group)} skills are named {name!r}: {paths}",
                "a host keeps only one of them; rename the others",
            )
    similarity = _limit(settings, "skill_description_similarity")
    for first, second, shared in _colliding_pairs(skills, similarity):
        yield settings.finding(
            "S103",
            WARN,
            subjects[first],
            f"description collides with {skills[second].name!r} ({skills[second].path}): "
            f"{shared:.0%} of their words are shared",
            "a host cannot tell them apart; say what makes each one different",
        )


def _colliding_pairs(skills: Sequence[Skill], similarity: float) -> list[tuple[int, int, float]]:
    """Index pairs whose descriptions share at least ``similarity`` of their words, in
    catalogue order.

    Shared words / all words can be no more than the smaller word count over the larger, so
    with descriptions sorted by word count each one is compared only with those not too much
    longer than itself: most pairs of a large catalogue are never intersected.
    """
    described = sorted(
        (
            (len(words), index, words)
            for index, skill in enumerate(skills)
            if skill.description
            for words in [_words(skill.description)]
        ),
        key=lambda entry: entry[0],
    )
    pairs: list[tuple[int, int, float]] = []
    for position, (size, index, words) in enumerate(described):
        for other_size, other_index, other_words in described[position + 1 :]:
            # The same division as the ratio below, so a pair exactly at the threshold is
            # never pruned by a rounding difference (0.3 * 10 > 3 in floating point).
            if other_size and size / other_size < similarity:
                break
            common = len(words & other_words)
            union = size + other_size - common
            if not union:
                continue  # two descriptions without a single word: S102 speaks for them
            if common / union >= similarity:
                low, high = sorted((index, other_index))
                pairs.append((low, high, common / union))
    return sorted(pairs)


# --- S104 -------------------------------------------------------------------------------


def _sizes(skill: Skill, subject: str, settings: RuleOverrides) -> Iterator[Finding | None]:
    def warn(message: str, hint: str) -> Finding | None:
        return settings.finding("S104", WARN, subject, message, hint)

    metadata_limit = _limit(settings, "skill_metadata_tokens")
    if skill.metadata > metadata_limit:
        yield warn(
            f"metadata is {skill.metadata:,} tokens, over {_number(metadata_limit)}",
            "every session pays for it; shorten the description",
        )
    body_limit = _limit(settings, "skill_body_tokens")
    if skill.body > body_limit:
        yield warn(
            f"body is {skill.body:,} tokens, over {_number(body_limit)}",
            "move detail into references/ files, loaded on demand",
        )
    lines_limit = _limit(settings, "skill_body_lines")
    if skill.body_lines > lines_limit:
        yield warn(
            f"body is {skill.body_lines:,} lines, over {_number(lines_limit)}",
            "move detail into references/ files, loaded on demand",
        )
    long_body = _limit(settings, "skill_body_tokens_without_references")
    if skill.body > long_body and not skill.references:
        yield warn(
            f"body is {skill.body:,} tokens (over {_number(long_body)}) and links no reference files",
            "split the rarely needed parts into references/ so they load only when used",
        )


# --- S105 -------------------------------------------------------------------------------


def _injections(skill: Skill, subject: str, settings: RuleOverrides) -> Iterator[Finding | None]:
    places: list[tuple[str, Iterable[tuple[str, int]]]] = [
        ("description", [(meaning, 0) for meaning, _ in injection_hits(skill.description)]),
        (
            f"{SKILL_FILE} line",
            [
                (meaning, line + skill.body_start_line - 1)
                for meaning, line in injection_hits(skill.body_text)
            ],
        ),
    ]
    places.extend(
        (f"{reference.path} line", reference.injections) for reference in skill.references
    )
    for place, hits in places:
        for meaning, line in hits:
            where = f"{place} {line}" if line else place
            yield settings.finding(
                "S105",
                INFO,
                subject,
                f"{where}: {meaning}",
                "check that this text is meant for the model (reported, never graded)",
            )


# --- S106 -------------------------------------------------------------------------------


def _references(skill: Skill, subject: str, settings: RuleOverrides) -> Iterator[Finding | None]:
    # What was named but could not be resolved, and is not wrong: said, never graded.
    for note in skill.notes:
        yield settings.finding(
            "S106", INFO, subject, note, "reported so the count is not a surprise (never graded)"
        )
    for broken in skill.broken_references:
        yield settings.finding(
            "S106",
            ERROR,
            subject,
            f"reference {broken.target!r} {broken.detail}",
            "" if broken.reason != "escape" else "keep every file a skill uses inside its folder",
        )
    depth_limit = _limit(settings, "skill_reference_depth")
    for path, depth in skill.reference_depths:
        if depth > depth_limit:
            yield settings.finding(
                "S106",
                WARN,
                subject,
                f"reference {path!r} is nested {depth} folders deep, over {_number(depth_limit)}",
                "keep references one level below SKILL.md (references/x.md)",
            )
