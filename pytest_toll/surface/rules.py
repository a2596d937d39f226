"""The M and A rules: judging memory files, subagents and commands.

M101 an ``@path`` import that cannot be followed: a missing file, a cycle, a hop past the host's
depth, a file the host does not import, or a path that leaves the repository (never read) · M102 an AGENTS.md chain past Codex's
``project_doc_max_bytes``: the named files' instructions are lost · A101 a subagent or
command the host cannot list (no description; a subagent's frontmatter unreadable or
without a name) · A102 a subagent description that never says when to delegate to it ·
A103 a subagent's or command's listing over its token limit · A104 a skill listing past what
its host keeps: a description longer than the host's cut, or a listing over the host's
budget (the skills whose descriptions it drops, named).

Severities are defaults; ``RuleOverrides`` overrides them per rule, and the thresholds by
name (``limits: {agent_metadata_tokens: 300}`` in toll.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from pytest_toll.core.findings import ERROR, WARN, Finding, RuleOverrides
from pytest_toll.skills.rules import SAYS_WHEN
from pytest_toll.surface.records import Delegate

#: The rules this module can report (toll.yaml ``rules:`` accepts exactly these and the others).
RULE_IDS = ("M101", "M102", "A101", "A102", "A103", "A104")

# "use PROACTIVELY" / "MUST BE USED" is how subagent guides (found with the search tool) tell
# authors to say an agent should be picked on its own; Claude Code's own plugin agents show
# when with <example> blocks. Each says when as plainly as "Use when …".
_DELEGATE_WHEN = re.compile(r"\bproactively\b|\bmust be used\b|<example>", re.IGNORECASE)

#: Every threshold the A rules read, with its default (named as in ``limits:``). A
#: subagent's or command's listing is a skill's listing in another list: the same default.
DEFAULT_THRESHOLDS: dict[str, float] = {
    "agent_metadata_tokens": 260,
    "command_metadata_tokens": 260,
}


def broken_import(
    settings: RuleOverrides, importer: str, line: int, target: str, why: str
) -> Finding | None:
    """M101: ``@target`` on ``importer:line`` was not followed, and why."""
    return settings.finding(
        "M101",
        WARN,
        f"{importer}:{line}",
        f"@{target} {why}; not read",
        "import text files inside the repository, five files deep at most counting the root, "
        "without cycles",
    )


def chain_cut(
    settings: RuleOverrides, limit: int, chain_bytes: int, lost: Iterable[str]
) -> Finding | None:
    """M102: the AGENTS.md chain is over ``limit`` bytes; ``lost`` are cut or dropped."""
    names = list(lost)
    return settings.finding(
        "M102",
        ERROR,
        names[0] if names else None,
        f"the AGENTS.md chain is {chain_bytes:,} bytes, over project_doc_max_bytes "
        f"({limit:,}): Codex never reads the rest, so the instructions of "
        f"{', '.join(names)} are lost (the nearest, most specific files go first)",
        "shorten the files nearer the root, or raise project_doc_max_bytes in .codex/config.toml",
    )


def check(delegates: Iterable[Delegate], settings: RuleOverrides) -> list[Finding]:
    """A101–A103 for subagents or commands, turned-off rules left out."""
    found: list[Finding | None] = []
    for delegate in delegates:
        found.extend(_listing(delegate, settings))
    return [finding for finding in found if finding is not None]


def _listing(delegate: Delegate, settings: RuleOverrides) -> Iterator[Finding | None]:
    agent = delegate.role == "agent"
    subject = delegate.name
    if not delegate.listed:
        return  # the user's alone: the model never sees a listing to judge
    if delegate.problem is not None:
        yield settings.finding("A101", ERROR if agent else WARN, subject, delegate.problem)
        return
    if agent and not isinstance(delegate.fields.get("name"), str):
        yield settings.finding(
            "A101", ERROR, subject, "has no name field: the host does not list it",
            "start the file with ---, name:, description:, ---",
        )  # fmt: skip
    if not delegate.description.strip():
        yield settings.finding(
            "A101",
            ERROR if agent else WARN,
            subject,
            "has no description: the model sees nothing to choose it by",
            "add a description: what it does and when to use it",
        )
        return
    says_when = SAYS_WHEN.search(delegate.description) or _DELEGATE_WHEN.search(
        delegate.description
    )
    if agent and not says_when:
        yield settings.finding(
            "A102",
            WARN,
            subject,
            "description never says when to delegate to it",
            "say when: 'Use when …' / 'Use proactively after …'",
        )
    limit_name = "agent_metadata_tokens" if agent else "command_metadata_tokens"
    limit = settings.threshold(limit_name, DEFAULT_THRESHOLDS[limit_name])
    if delegate.metadata > limit:
        yield settings.finding(
            "A103",
            WARN,
            subject,
            f"its listing is {delegate.metadata:,} tokens, over {limit:,.0f} ({limit_name}): "
            "paid on every request",
            "keep the description to what it does and when; move detail into the body",
        )


def listing_budget(
    settings: RuleOverrides,
    host: str,
    skills: Iterable[tuple[str, str, int]],
    *,
    budget: int | None,
    description_chars: int | None,
) -> list[Finding]:
    """A104: what of a skill listing (``(name, description, tokens)`` in listing order) the
    host cuts (a description past ``description_chars``) or drops (past ``budget``)."""
    found: list[Finding | None] = []
    listed = list(skills)
    for name, description, _ in listed:
        if description_chars is not None and len(description) > description_chars:
            found.append(
                settings.finding(
                    "A104",
                    WARN,
                    name,
                    f"its description is {len(description):,} characters; {host} lists the "
                    f"first {description_chars:,}: the rest never reaches the model",
                    "put what the skill does and when to use it first, and keep it short",
                )
            )
    total = sum(tokens for _, _, tokens in listed)
    if budget is not None and total > budget:
        running, dropped = 0, []
        for name, _, tokens in listed:
            running += tokens
            if running > budget:
                dropped.append(name)
        found.append(
            settings.finding(
                "A104",
                WARN,
                dropped[0],
                f"the skill listing is {total:,} tokens, over {host}'s budget of {budget:,}: "
                f"it drops descriptions (keeping the most used ones); past the budget in "
                f"listing order: {', '.join(dropped)}",
                "shorten descriptions, merge rarely used skills, or raise the budget "
                "(skillListingBudgetFraction in settings.json)",
            )
        )
    return [finding for finding in found if finding is not None]
