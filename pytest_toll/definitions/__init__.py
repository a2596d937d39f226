"""Job 1, definitions: MCP tool lists from a server or a file, weighed and judged.

source (``weigh_source``) -> mcp (listing, stdio + process, http) or tools (a file) -> weigh
(with serialize) -> rules -> one ``ToolsReport``; diff compares two reports.
"""
