"""The hosts as plain data: what each agent host loads from a repository, and from where we
know it.

One :class:`Host` row per host (Claude Code, Codex, Gemini CLI, GitHub Copilot, Cursor) for
the range of versions it was read for: its memory files and their rules, how far imports go
and what they may name, whether comments are stripped, where its skills, subagents and
commands are listed and how they are named, whether MCP tool definitions are sent on every
request or deferred (and the threshold), and the client capabilities its MCP handshake
declares. Every fact has its source in ``sources`` (a documentation page, or an open-source
file at a commit or a package version) and the version it was read for; where the code is
open (Codex, Gemini CLI) it was read, where it is closed (Claude Code, Cursor, Copilot) the
host's own documentation is the source. ``tests/core/test_hosts.py`` checks that no fact
lacks its source.

The readers (:mod:`pytest_toll.surface.memory`, :mod:`pytest_toll.surface.agents`,
:mod:`pytest_toll.surface.bill`) read this table; nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Literal

#: How a host sends MCP tool definitions: on every request, or behind a search tool.
ToolLoading = Literal["eager", "deferred", "deferred above threshold"]

CLAUDE_MEMORY_DOC = "https://code.claude.com/docs/en/memory"
CLAUDE_MCP_DOC = "https://code.claude.com/docs/en/mcp"
CLAUDE_SLASH_DOC = "https://code.claude.com/docs/en/slash-commands"
CLAUDE_SKILLS_DOC = "https://code.claude.com/docs/en/skills"
CLAUDE_PLUGINS_DOC = "https://code.claude.com/docs/en/plugins-reference"
CODEX_PROJECT_DOC = (
    "openai/codex codex-rs/core/src/project_doc.rs @ 0bd53e457bf7dc40ff77fe2780e9c3070505b3b7"
)
CODEX_AGENTS_DOC = "https://developers.openai.com/codex/guides/agents-md"
CODEX_SKILLS_DOC = "https://developers.openai.com/codex/skills"
GEMINI_CORE = "@google/gemini-cli-core 0.61.0 dist/src/utils/memoryDiscovery.js"
GEMINI_IMPORTS = "@google/gemini-cli-core 0.61.0 dist/src/utils/memoryImportProcessor.js"
GEMINI_CONFIG_DOC = "https://geminicli.com/docs/get-started/configuration (context.fileName)"
COPILOT_DOC = (
    "https://docs.github.com/en/copilot/how-tos/configure-custom-instructions/"
    "add-repository-instructions"
)
CURSOR_RULES_DOC = "https://cursor.com/docs/context/rules"
MCP_ROOTS_SPEC = "https://modelcontextprotocol.io/specification/2025-06-18/client/roots"


@dataclass(frozen=True)
class Host:
    """What one host loads from a repository at session start, and what on demand."""

    #: The host's name on the command line and in ``toll.yaml`` (``claude-code``).
    name: str
    #: The ``memory:`` reader (and ledger entry name) for its memory files (``claude``).
    memory: str
    #: The versions these facts were read for (``>=2.1`` …).
    versions: str
    #: Memory files read in every folder from the repository root down to the working folder.
    memory_files: tuple[str, ...]
    #: Folders of memory files (relative to the root) and the file ending read there.
    rule_folders: tuple[tuple[str, str], ...] = ()
    #: Memory files below the working folder: ``never``, ``on demand`` (when a tool touches
    #: their folder), or ``at start``.
    below_working_folder: str = "never"
    #: Files in an import chain, counting the file that imports first (None: no imports).
    import_max_files: int | None = None
    #: Endings an import may name (lower case, with the dot); empty: any file.
    import_extensions: frozenset[str] = frozenset()
    #: An import's text takes the place of its ``@path`` (else the mention stays and the
    #: imported file is sent beside it).
    imports_inline: bool = False
    #: Block HTML comments (``<!-- … -->`` on lines of their own) removed before loading.
    strips_html_comments: bool = False
    #: A setting that renames the memory file: ``(file, dotted key)``.
    memory_file_setting: tuple[str, str] | None = None
    #: Bytes of the whole memory chain the host reads at most (None: no limit).
    memory_max_bytes: int | None = None
    #: Skill folders (relative to the root) whose listings are on every request.
    skill_folders: tuple[str, ...] = ()
    #: Subagent folders whose listings are on every request.
    agent_folders: tuple[str, ...] = ()
    #: Command folders whose listings are on every request.
    command_folders: tuple[str, ...] = ()
    #: A command in a subfolder is listed as ``folder:name`` (else by its file name alone).
    command_folder_prefix: bool = False
    #: A command or skill with this frontmatter key set to true is left out of the listing.
    command_unlisted_key: str | None = None
    #: Plugins (``.claude-plugin/plugin.json``) the host lists, each part once, under the
    #: manifest's name.
    lists_plugins: bool = False
    #: Rules whose description is listed on every request while their body waits.
    described_rules: bool = False
    #: The share of the context window the skill listing may take; past it the host drops
    #: descriptions (None: no budget known).
    listing_budget_share: float | None = None
    #: Characters of one skill's description the listing keeps (None: no cut known).
    listing_description_chars: int | None = None
    #: How MCP tool definitions reach the model.
    mcp_tools: ToolLoading = "eager"
    #: The share of the context window above which tool definitions are deferred (Claude
    #: Code's ``ENABLE_TOOL_SEARCH=auto``; by default it defers them whatever their size).
    mcp_defer_share: float | None = None
    #: Client capabilities the host's MCP ``initialize`` declares.
    client_capabilities: tuple[str, ...] = ()
    #: Per fact (a field's name): its source and the version it was read for.
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def facts(self) -> tuple[str, ...]:
        """The fields that state a fact about the host (every one needs a source)."""
        return tuple(f.name for f in fields(self) if f.name not in {"name", "memory", "sources"})

    @property
    def import_hops(self) -> int:
        """How many imports deep the host follows (0: none)."""
        return 0 if self.import_max_files is None else self.import_max_files - 1


#: Claude Code's import endings: the text files its memory page says an import names.
_TEXT_ENDINGS = frozenset(
    {".md", ".markdown", ".txt", ".mdx", ".rst", ".json", ".yaml", ".yml", ".toml"}
)

CLAUDE_CODE = Host(
    name="claude-code",
    memory="claude",
    versions=">=2.1.7",
    memory_files=("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"),
    rule_folders=((".claude/rules", ".md"),),
    below_working_folder="on demand",
    import_max_files=5,
    import_extensions=_TEXT_ENDINGS,
    strips_html_comments=True,
    skill_folders=(".claude/skills",),
    agent_folders=(".claude/agents",),
    command_folders=(".claude/commands",),
    command_folder_prefix=True,
    command_unlisted_key="disable-model-invocation",
    lists_plugins=True,
    listing_budget_share=0.01,
    listing_description_chars=1536,
    mcp_tools="deferred",
    mcp_defer_share=0.10,
    client_capabilities=("roots",),
    sources={
        "versions": f"{CLAUDE_MEMORY_DOC}, {CLAUDE_MCP_DOC} (read 2026-12, Claude Code 2.1)",
        "memory_files": f"{CLAUDE_MEMORY_DOC}: CLAUDE.md, .claude/CLAUDE.md, CLAUDE.local.md",
        "rule_folders": f"{CLAUDE_MEMORY_DOC}: .claude/rules/*.md, paths: on demand",
        "below_working_folder": f"{CLAUDE_MEMORY_DOC}: nested CLAUDE.md when files there are read",
        "import_max_files": f"{CLAUDE_MEMORY_DOC}: imports, five files deep counting the root",
        "import_extensions": f"{CLAUDE_MEMORY_DOC}: an import names a text file",
        "imports_inline": f"{CLAUDE_MEMORY_DOC}: imported files are loaded beside the importer",
        "strips_html_comments": f"{CLAUDE_MEMORY_DOC}: block HTML comments are left out",
        "memory_file_setting": "none documented",
        "memory_max_bytes": "none documented for CLAUDE.md",
        "skill_folders": f"{CLAUDE_SKILLS_DOC}: .claude/skills/<name>/SKILL.md",
        "agent_folders": "https://code.claude.com/docs/en/sub-agents: .claude/agents/*.md",
        "command_folders": f"{CLAUDE_SLASH_DOC}: .claude/commands/**/*.md",
        "command_folder_prefix": f"{CLAUDE_SLASH_DOC}: git/commit.md is listed git:commit",
        "command_unlisted_key": f"{CLAUDE_SLASH_DOC}, {CLAUDE_SKILLS_DOC}: "
        "disable-model-invocation: true, the description not in context",
        "lists_plugins": f"{CLAUDE_PLUGINS_DOC}: parts listed once, prefixed by manifest name",
        "described_rules": "not a Claude Code notion",
        "listing_budget_share": f"{CLAUDE_SKILLS_DOC}: the skill listing's budget, 1% of the "
        "context window (skillListingBudgetFraction, 2.1.129; claudefa.st/blog/guide/mechanics/"
        "skill-listing-budget read it from the binary)",
        "listing_description_chars": f"{CLAUDE_SKILLS_DOC}: each description cut at 1,536 "
        "characters (claudecodeguides.com/claude-skills-performance-optimization)",
        "mcp_tools": f"{CLAUDE_MCP_DOC}: tool search defers MCP tools by default",
        "mcp_defer_share": f"{CLAUDE_MCP_DOC}: ENABLE_TOOL_SEARCH=auto defers above 10% "
        "of the context window",
        "client_capabilities": f"{MCP_ROOTS_SPEC}; {CLAUDE_MCP_DOC}: roots declared",
    },
)

CODEX = Host(
    name="codex",
    memory="codex",
    versions=">=0.171",
    memory_files=("AGENTS.override.md", "AGENTS.md"),
    memory_max_bytes=32 * 1024,
    skill_folders=(".codex/skills", ".agents/skills"),
    agent_folders=(".codex/agents",),
    mcp_tools="eager",
    sources={
        "versions": f"{CODEX_PROJECT_DOC} (codex 0.171.0 replayed)",
        "memory_files": f"{CODEX_PROJECT_DOC}: candidate_filenames, one per folder",
        "rule_folders": f"{CODEX_PROJECT_DOC}: none",
        "below_working_folder": f"{CODEX_PROJECT_DOC}: root down to the working folder only",
        "import_max_files": f"{CODEX_PROJECT_DOC}: no imports",
        "import_extensions": f"{CODEX_PROJECT_DOC}: no imports",
        "imports_inline": f"{CODEX_PROJECT_DOC}: no imports",
        "strips_html_comments": f"{CODEX_PROJECT_DOC}: read verbatim (lossy UTF-8)",
        "memory_file_setting": f"{CODEX_PROJECT_DOC}: project_doc_fallback_filenames (config)",
        "memory_max_bytes": f"{CODEX_PROJECT_DOC}: project_doc_max_bytes, 32 KiB by default",
        "skill_folders": f"{CODEX_SKILLS_DOC}: .codex/skills, .agents/skills",
        "agent_folders": "https://developers.openai.com/codex/subagents: .codex/agents/*.toml",
        "command_folders": "Codex reads no project command folder",
        "command_folder_prefix": "no project commands",
        "command_unlisted_key": "no project commands",
        "lists_plugins": "Codex reads no Claude Code plugin",
        "described_rules": "not a Codex notion",
        "listing_budget_share": "none known for Codex",
        "listing_description_chars": "none known for Codex",
        "mcp_tools": "openai/codex codex-rs/core: tools sent with each request",
        "mcp_defer_share": "no deferral threshold",
        "client_capabilities": "openai/codex codex-rs/rmcp-client: no roots capability",
    },
)

GEMINI_CLI = Host(
    name="gemini-cli",
    memory="gemini",
    versions=">=0.50",
    memory_files=("GEMINI.md",),
    below_working_folder="on demand",
    import_max_files=6,
    imports_inline=True,
    memory_file_setting=(".gemini/settings.json", "context.fileName"),
    mcp_tools="eager",
    client_capabilities=("roots",),
    sources={
        "versions": f"{GEMINI_CORE} (JIT subfolder memory)",
        "memory_files": f"{GEMINI_CORE}: findUpwardGeminiFiles, working folder up to git root",
        "rule_folders": f"{GEMINI_CORE}: none",
        "below_working_folder": f"{GEMINI_CORE}: loadJitSubdirectoryMemory",
        "import_max_files": f"{GEMINI_IMPORTS}: maxDepth 5 below the root file",
        "import_extensions": f"{GEMINI_IMPORTS}: any file inside the project root",
        "imports_inline": f"{GEMINI_IMPORTS}: processImports puts the text where @path was",
        "strips_html_comments": f"{GEMINI_IMPORTS}: text kept as written",
        "memory_file_setting": f"{GEMINI_CONFIG_DOC}: a string or a list of names; "
        "gemini-cli-core 0.61.0 config/config.js setGeminiMdFilename adds them to GEMINI.md",
        "memory_max_bytes": f"{GEMINI_CORE}: no limit",
        "skill_folders": "not read for this version",
        "agent_folders": "not read for this version",
        "command_folders": "Gemini CLI's .gemini/commands are TOML, run by the user only",
        "command_folder_prefix": "not listed to the model",
        "command_unlisted_key": "not listed to the model",
        "lists_plugins": "Gemini CLI reads no Claude Code plugin",
        "described_rules": "not a Gemini CLI notion",
        "listing_budget_share": "no skill listing read",
        "listing_description_chars": "no skill listing read",
        "mcp_tools": "@google/gemini-cli-core 0.61.0: tool declarations on each request",
        "mcp_defer_share": "no deferral threshold",
        "client_capabilities": "@google/gemini-cli-core 0.61.0 dist/src/tools/mcp-client.js: roots",
    },
)

COPILOT = Host(
    name="copilot",
    memory="copilot",
    versions="GitHub Copilot (docs read 2026-12)",
    memory_files=(".github/copilot-instructions.md",),
    rule_folders=((".github/instructions", ".instructions.md"),),
    mcp_tools="eager",
    sources={
        "versions": COPILOT_DOC,
        "memory_files": f"{COPILOT_DOC}: .github/copilot-instructions.md",
        "rule_folders": f"{COPILOT_DOC}: .github/instructions/**/*.instructions.md, applyTo",
        "below_working_folder": f"{COPILOT_DOC}: repository-wide only",
        "import_max_files": f"{COPILOT_DOC}: no imports",
        "import_extensions": f"{COPILOT_DOC}: no imports",
        "imports_inline": f"{COPILOT_DOC}: no imports",
        "strips_html_comments": f"{COPILOT_DOC}: not documented; kept",
        "memory_file_setting": f"{COPILOT_DOC}: none",
        "memory_max_bytes": f"{COPILOT_DOC}: none documented",
        "skill_folders": "not read for this version",
        "agent_folders": "not read for this version",
        "command_folders": "not read for this version",
        "command_folder_prefix": "not read for this version",
        "command_unlisted_key": "not read for this version",
        "lists_plugins": "Copilot reads no Claude Code plugin",
        "described_rules": f"{COPILOT_DOC}: applyTo, not descriptions",
        "listing_budget_share": "no skill listing read",
        "listing_description_chars": "no skill listing read",
        "mcp_tools": "https://docs.github.com/en/copilot/customizing-copilot/extending-copilot-chat-with-mcp",
        "mcp_defer_share": "no deferral threshold documented",
        "client_capabilities": "not documented",
    },
)

CURSOR = Host(
    name="cursor",
    memory="cursor",
    versions="Cursor 1.x-2.x (docs read 2026-12)",
    memory_files=("AGENTS.md", ".cursorrules"),
    rule_folders=((".cursor/rules", ".mdc"),),
    below_working_folder="on demand",
    described_rules=True,
    mcp_tools="eager",
    sources={
        "versions": CURSOR_RULES_DOC,
        "memory_files": f"{CURSOR_RULES_DOC}: AGENTS.md; .cursorrules (legacy, still read)",
        "rule_folders": f"{CURSOR_RULES_DOC}: .cursor/rules/*.mdc, nested folders too",
        "below_working_folder": f"{CURSOR_RULES_DOC}: nested rules apply to files in their folder",
        "import_max_files": f"{CURSOR_RULES_DOC}: @file references in rules, not followed here",
        "import_extensions": f"{CURSOR_RULES_DOC}: no imports",
        "imports_inline": f"{CURSOR_RULES_DOC}: no imports",
        "strips_html_comments": f"{CURSOR_RULES_DOC}: not documented; kept",
        "memory_file_setting": f"{CURSOR_RULES_DOC}: none",
        "memory_max_bytes": f"{CURSOR_RULES_DOC}: none documented",
        "skill_folders": "not read for this version",
        "agent_folders": "not read for this version",
        "command_folders": "not read for this version",
        "command_folder_prefix": "not read for this version",
        "command_unlisted_key": "not read for this version",
        "lists_plugins": "Cursor reads no Claude Code plugin",
        "described_rules": f"{CURSOR_RULES_DOC}: Apply Intelligently, description every request",
        "listing_budget_share": "no skill listing read",
        "listing_description_chars": "no skill listing read",
        "mcp_tools": "https://cursor.com/docs/context/mcp: tools sent to the agent",
        "mcp_defer_share": "no deferral threshold documented",
        "client_capabilities": "not documented: none assumed",
    },
)

#: Every host, by its name.
HOSTS: dict[str, Host] = {
    host.name: host for host in (CLAUDE_CODE, CODEX, GEMINI_CLI, COPILOT, CURSOR)
}
#: A host by its memory reader's name (``claude`` is Claude Code).
BY_MEMORY: dict[str, Host] = {host.memory: host for host in HOSTS.values()}


def host_named(name: str) -> Host | None:
    """The host called ``name`` (``claude-code``), or by its memory name (``claude``)."""
    return HOSTS.get(name) or BY_MEMORY.get(name)
