"""A count_tokens server on 127.0.0.1 speaking Anthropic's wire format, for the ``--exact``
paths of measure, weigh and context. Its tokenizer counts one token per 4 characters of
everything the request carries except ``model`` (so every field sent is counted)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.local_http import serving

KEY = "sk-ant-test-count-0123"


def counted(body: dict[str, Any]) -> int:
    """What the server answers for ``body``."""
    carried = {key: value for key, value in body.items() if key != "model"}
    return len(json.dumps(carried, sort_keys=True)) // 4


@dataclass
class CountServer:
    url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def environment(self) -> dict[str, str]:
        return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": self.url}


@contextmanager
def count_tokens_server() -> Iterator[CountServer]:
    served = CountServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            reply: dict[str, object]
            if self.path != "/v1/messages/count_tokens" or self.headers.get("x-api-key") != KEY:
                status, reply = 404, {"type": "error", "error": {"type": "not_found_error"}}
            else:
                served.bodies.append(body)
                status, reply = 200, {"input_tokens": counted(body)}
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serving(Handler) as served.url:
        yield served
