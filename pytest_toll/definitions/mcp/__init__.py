"""A minimal MCP client that does one thing: list a server's tools, every page, and go.

``listing`` holds the protocol flow (handshake or the 2026-07-28 fallback, paging) and the
``Listing`` it returns; ``stdio`` and ``http`` are the two transports, each with its
``list_stdio`` / ``list_http`` entry point; ``process`` starts and stops a stdio server's
process tree (POSIX and Windows).
"""
