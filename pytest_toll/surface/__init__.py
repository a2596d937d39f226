"""The agent's always-on surface besides tools and skills: memory files, subagents,
commands and plugins, each measured as bare o200k text with the host's framing left out.

``memory`` (CLAUDE.md, AGENTS.md, GEMINI.md, Copilot and Cursor instructions), ``agents``
and ``commands`` (frontmatter + body: the metadata is listed every session, the body loads
on delegation or invocation) and ``plugins`` (a Claude Code plugin's components, each by its
own kind's rules) are ledger kinds of their own; :mod:`pytest_toll.surface.render` is the
``toll surface`` text.
"""
