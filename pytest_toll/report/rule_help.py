"""What each rule checks and what to do about it: the help text a code-scanning view shows.

One entry per rule id the jobs define (tests/report/test_sarif.py keeps this table, the jobs'
``RULE_IDS`` and the ledger schema's rule names in step). Every finding also carries its own
message and hint; this is the rule-level text a reviewer reads before looking at one finding.
"""

from __future__ import annotations

from typing import NamedTuple


class RuleHelp(NamedTuple):
    title: str
    help: str


#: How any rule is turned down or off, said once after each rule's own advice.
TURN_DOWN = (
    "To accept it on purpose, set the rule's severity under rules: in toll.yaml "
    "(e.g. rules: {RULE: warn} or RULE: off); thresholds live under limits:."
)

RULES: dict[str, RuleHelp] = {
    "E112": RuleHelp(
        "tools/list order differs between two connections",
        "A server that lists its tools in a different order each time defeats prompt caching. "
        "Sort the tools before returning them.",
    ),
    "E116": RuleHelp(
        "non-JSON output on a stdio server's stdout",
        "An MCP stdio client reads every stdout line as a JSON-RPC message. Send logs and "
        "banners to stderr.",
    ),
    "E121": RuleHelp(
        "tool description missing, a placeholder or very short",
        "The model chooses tools by their descriptions. Say what the tool does in at least a "
        "sentence.",
    ),
    "E122": RuleHelp(
        "tool description misses most of what a model needs",
        "A good description is 40-600 characters, says when to use the tool, documents its "
        "parameters and says what it returns; add what is missing.",
    ),
    "E123": RuleHelp(
        "tool annotations missing, or a destructive-looking tool without destructiveHint",
        "Give tools annotations; mark a tool that deletes or overwrites with destructiveHint "
        "(or readOnlyHint when it does not), so hosts can ask before running it.",
    ),
    "E124": RuleHelp(
        "parameters undocumented, or an enum too long",
        "Describe each parameter in the input schema; replace an enum of more than 50 values "
        "with a free string and a sentence, or a lookup tool.",
    ),
    "E125": RuleHelp(
        "too many tools on one server",
        "Every tool's definition is paid on every request, and models choose worse among "
        "many. Merge tools that differ by a parameter, or split the server by task.",
    ),
    "E126": RuleHelp(
        "tool names too long, duplicated or in mixed styles",
        "Keep names unique, at most 64 characters and in one style (snake_case or "
        "kebab-case), as hosts and models expect.",
    ),
    "E127": RuleHelp(
        "one tool's definition is heavy",
        "Shorten its description and schema: `toll fix` lists edits with each saving measured.",
    ),
    "E128": RuleHelp(
        "the server's tool definitions are heavy in total",
        "This is paid on every request. Trim descriptions and schemas (`toll fix`), or drop "
        "tools the agent does not use.",
    ),
    "E130": RuleHelp(
        "instruction-injection phrases in a tool definition",
        "Text that tells the model to ignore instructions or act on its own is a prompt "
        "injection risk. Check that the wording is intended; never graded.",
    ),
    "E131": RuleHelp(
        "an MCP tool or server paid on every request and not called in the newest sessions",
        "A host that sends MCP tool definitions eagerly pays for every tool on every request, "
        "called or not. When the transcripts show no call in the newest sessions "
        "(transcripts: unused_after_sessions), leave the tool or the server out with the "
        "host's own setting: toll usage --fix proposes it and --write writes it.",
    ),
    "S101": RuleHelp(
        "skill frontmatter missing or invalid",
        "SKILL.md needs YAML frontmatter with a lowercase, hyphenated name equal to its folder "
        "name and a description of 1-1024 characters.",
    ),
    "S102": RuleHelp(
        "skill description thin, or never says when to use the skill",
        "The description is all an agent sees before activating the skill. Say what it does "
        "and when to use it.",
    ),
    "S103": RuleHelp(
        "two skills share a name, or their descriptions collide",
        "An agent cannot tell such skills apart. Rename one, or make the descriptions say how "
        "they differ.",
    ),
    "S104": RuleHelp(
        "skill metadata or body heavy",
        "Keep the name and description short (paid for every installed skill) and move detail "
        "from a long body into referenced files, which load only when needed.",
    ),
    "S105": RuleHelp(
        "instruction-injection phrases in a skill",
        "Check that the wording is intended; never graded.",
    ),
    "S106": RuleHelp(
        "skill reference missing, escaping the skill folder, or nested too deep",
        "Fix the link, keep referenced files inside the skill folder, and at most one folder deep.",
    ),
    "TL001": RuleHelp(
        "transcripts decision with an unknown status",
        "A decision's status is replace, keep or watch.",
    ),
    "TL002": RuleHelp(
        "transcripts decision without its reason or replacement",
        "replace needs `with:` (what replaces the tool); keep and watch need `reason:`.",
    ),
    "TL003": RuleHelp(
        "a heavy tool-result shape nobody has decided about",
        "Add the shape under transcripts.decisions with replace, keep or watch.",
    ),
    "TL004": RuleHelp(
        "a shape decided twice",
        "Two keys for one shape in transcripts.decisions; keep one.",
    ),
    "TL005": RuleHelp(
        "repeated tool results above the waste-ratio pin",
        "The same results are fetched again within sessions more than before. Find the "
        "repeats with `toll repeats`.",
    ),
    "M101": RuleHelp(
        "a memory file's @import cannot be followed",
        "An @path import that is missing, forms a cycle, goes past five hops or leaves the "
        "repository is never read, so its instructions never reach the agent. Fix the path "
        "or remove the import.",
    ),
    "M102": RuleHelp(
        "an AGENTS.md chain is longer than Codex reads",
        "Codex joins AGENTS.md files from the root down and stops at project_doc_max_bytes "
        "(32 KiB by default): the nearest, most specific files are the ones cut. Shorten the "
        "chain or raise the limit in the Codex config.",
    ),
    "A101": RuleHelp(
        "a subagent or command the host cannot list",
        "A subagent or command without a readable name and description in its frontmatter "
        "is never offered to the model. Give it both.",
    ),
    "A102": RuleHelp(
        "a subagent description never says when to delegate",
        "The model delegates by the description alone. Say when to use the subagent "
        '("Use when…", "Use after…").',
    ),
    "A103": RuleHelp(
        "a subagent's or command's listing is too long",
        "Every listing is paid on every request. Keep the description short; put detail in "
        "the body, which loads only when the subagent or command is used.",
    ),
    "A104": RuleHelp(
        "a skill listing past what its host keeps",
        "The host cuts long descriptions and drops descriptions past its listing budget: "
        "a skill without its description is rarely chosen. Shorten or merge descriptions.",
    ),
    "R101": RuleHelp(
        "a tool's result takes a large share of the window",
        "Return less by default: a summary, the first items, and a tool (or a parameter) for "
        "the detail; result_window_share under limits: sets the share.",
    ),
    "R102": RuleHelp(
        "a list result with no way to page",
        "Give the tool a cursor (or limit and offset) and return one page at a time, with the "
        "next cursor in the result; result_list_items under limits: sets the size.",
    ),
    "R103": RuleHelp(
        "a tool's result repeats its arguments back",
        "Return what changed (an id, a count, a status), not the text the model just sent: it "
        "pays for it twice.",
    ),
}


def rule_help(rule_id: str) -> RuleHelp:
    """The rule's title and advice; a rule this table does not know still gets help text."""
    known = RULES.get(rule_id)
    advice = known.help if known else f"See rule {rule_id} in the pytest-toll documentation."
    title = known.title if known else f"pytest-toll rule {rule_id}"
    return RuleHelp(title, f"{advice} {TURN_DOWN.replace('RULE', rule_id)}")
