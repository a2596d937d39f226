"""Job 1, definitions: MCP tool lists from a server or a file, weighed and judged."""
