"""An MCP server built with the official SDK, the oracle for pytest-toll's client tests.

Options select the transport and the behaviours under test:
  --http [--json-response]   streamable HTTP on 127.0.0.1; the bound port is printed first
  --page-size N              serve tools/list in pages of N (cursor = next index)
  --loop-cursor              every page answers the same nextCursor
  --fail-list                tools/list answers a JSON-RPC error
  --order-state FILE         every other start lists the tools in reverse order
  --modern-only              refuse initialize the way a 2026-07-28-only server does
  --noise                    print a banner to stdout before serving
  --extra N                  add N generated tools after the three real ones
  --expect-header K=V        (HTTP) answer 401 unless the request carries this header
  --roots-tool               list a roots tool only to a client that declares the roots
                             capability, after asking it roots/list (server-everything's way)
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ListToolsResult, PaginatedRequestParams, ToolAnnotations

INSTRUCTIONS = "Use read_file before write_file. Paths are relative to the project root."


class ConfiguredServer(MCPServer[Any]):
    page_size = 0
    loop_cursor = False
    fail_list = False
    roots_tool = False

    async def _handle_list_tools(  # the SDK's tools/list handler, paged for the tests
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        if self.fail_list:
            raise MCPError(code=-32603, message="tool registry unavailable")
        tools = await self.list_tools()
        if self.roots_tool:
            declared = ctx.session.client_capabilities
            if declared is None or declared.roots is None:
                tools = [tool for tool in tools if tool.name != "list_roots"]
            else:
                # Asks the client, as server-everything does: a client that declared roots
                # and cannot answer fails the listing here.
                roots = await ctx.session.list_roots()
                assert roots.roots, "the client declared roots but shares none"
        if not self.page_size:
            return ListToolsResult(tools=tools)
        cursor = params.cursor if params is not None else None
        start = int(cursor) if cursor and cursor.isdigit() else 0
        end = start + self.page_size
        if self.loop_cursor:
            return ListToolsResult(tools=tools[start:end], next_cursor="same")
        return ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None
        )


async def refuse_initialize(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    if ctx.method == "initialize":
        requested = (ctx.params or {}).get("protocolVersion")
        raise MCPError(
            code=-32022,
            message="Unsupported protocol version",
            data={"supported": ["2026-07-28"], "requested": requested},
        )
    return await call_next(ctx)


def read_file(path: str) -> str:
    """Read a UTF-8 text file and return its contents.

    Use this when you need the current text of a file before editing it.

    Args:
        path: the file's path, relative to the project root
    """
    return Path(path).read_text()


def write_file(path: str, content: str) -> str:
    """Write text to a file, replacing it. Returns the number of characters written."""
    Path(path).write_text(content)
    return str(len(content))


def search(query: str, limit: int = 10) -> list[str]:
    """Search file names."""
    return [query][:limit]


def build(args: argparse.Namespace) -> ConfiguredServer:
    middleware = [refuse_initialize] if args.modern_only else []
    server = ConfiguredServer("toll-test-server", instructions=INSTRUCTIONS, middleware=middleware)
    tools = [
        (read_file, ToolAnnotations(read_only_hint=True)),
        (write_file, ToolAnnotations(destructive_hint=True)),
        (search, None),
    ]
    if args.order_state:
        state = Path(args.order_state)
        starts = int(state.read_text()) if state.exists() else 0
        state.write_text(str(starts + 1))
        if starts % 2:
            tools.reverse()
    for function, hints in tools:
        server.add_tool(cast(Callable[..., Any], function), annotations=hints)
    for index in range(args.extra):
        server.add_tool(lambda: "ok", name=f"extra_{index:03d}", description=f"Extra tool {index}.")
    if args.roots_tool:
        server.add_tool(lambda: "roots", name="list_roots", description="The client's roots.")
        server.roots_tool = True
    server.page_size = args.page_size
    server.loop_cursor = args.loop_cursor
    server.fail_list = args.fail_list
    return server


def serve_http(server: ConfiguredServer, args: argparse.Namespace) -> None:
    import uvicorn
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import PlainTextResponse

    app = server.streamable_http_app(json_response=args.json_response)
    if args.expect_header:
        name, _, value = args.expect_header.partition("=")

        async def check(request: Any, call_next: Any) -> Any:
            if request.headers.get(name) != value:
                return PlainTextResponse("missing credentials", status_code=401)
            return await call_next(request)

        app.add_middleware(BaseHTTPMiddleware, dispatch=check)
    # Bind and listen first, then report the port: the test never races another process for a
    # free port, and a connection made before uvicorn is up waits in the backlog.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--loop-cursor", action="store_true")
    parser.add_argument("--fail-list", action="store_true")
    parser.add_argument("--order-state", default="")
    parser.add_argument("--modern-only", action="store_true")
    parser.add_argument("--noise", action="store_true")
    parser.add_argument("--extra", type=int, default=0)
    parser.add_argument("--expect-header", default="")
    parser.add_argument("--roots-tool", action="store_true")
    return parser.parse_args(argv)


def main() -> None:
    args = parse()
    server = build(args)
    if args.http:
        serve_http(server, args)
        return
    if args.noise:
        print("toll-test-server 1.0 starting (a banner on stdout)", flush=True)
    print("server ready", file=sys.stderr, flush=True)
    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
