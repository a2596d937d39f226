"""A hand-written stdio JSON-RPC server for the faults the SDK cannot produce.

Usage: raw_server.py MODE [PID_FILE]
  hang          start a child process (its pid written to PID_FILE), then never answer
  die           complain on stderr and exit 3 after the first request
  noise         answer correctly, with non-JSON lines and a stray JSON value between answers
  bare          a 2026-07-28-only server: initialize is an unknown method; tools/list
                answers only requests carrying the per-request _meta envelope
  not-a-list    tools/list answers {"items": []}
  env           the one tool's description reports $TOLL_TEST_VALUE and the working directory
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

TOOLS = [
    {
        "name": "ping",
        "description": "Check that the server is alive.",
        "inputSchema": {"type": "object"},
    }
]
MODERN_KEY = "io.modelcontextprotocol/protocolVersion"


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        with open(sys.argv[2], "w") as pid_file:
            pid_file.write(str(child.pid))
        print("hanging on purpose", file=sys.stderr, flush=True)
        while True:
            time.sleep(1)
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue
        reply: dict[str, object] = {"jsonrpc": "2.0", "id": request["id"]}
        if mode == "die":
            print("fatal: DATABASE_URL is not set", file=sys.stderr, flush=True)
            sys.exit(3)
        if method == "initialize":
            if mode == "bare":
                reply["error"] = {"code": -32601, "message": "Method not found"}
            else:
                reply["result"] = {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "0"},
                }
        elif method == "tools/list":
            meta = (request.get("params") or {}).get("_meta") or {}
            if mode == "not-a-list":
                reply["result"] = {"items": []}
            elif mode == "env":
                found = f"{os.environ.get('TOLL_TEST_VALUE')} in {os.getcwd()}"
                reply["result"] = {"tools": [{"name": "env", "description": found}]}
            elif mode == "bare" and meta.get(MODERN_KEY) != "2026-07-28":
                reply["error"] = {"code": -32602, "message": "missing the per-request envelope"}
            else:
                reply["result"] = {"tools": TOOLS}
        else:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        if mode == "noise":
            print("DEBUG: handling " + str(method), flush=True)
            print("[1, 2, 3]", flush=True)
            print("", flush=True)
        send(reply)


if __name__ == "__main__":
    main()
