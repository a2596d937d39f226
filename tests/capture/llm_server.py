"""A local stand-in for the LLM APIs: real HTTP on 127.0.0.1, their wire formats, every
request body kept as received so a test can check what capture measured against it.

Anthropic Messages and OpenAI Chat Completions / Responses (JSON, and server-sent events when
the body asks to stream); Bedrock InvokeModel and Converse (JSON, and AWS event streams for
``invoke-with-response-stream`` / ``converse-stream``, the binary framing botocore decodes);
Vertex AI's Anthropic ``rawPredict`` / ``streamRawPredict``; Gemini ``generateContent`` /
``streamGenerateContent`` (server-sent events). Nothing checks a signature or a key.

Run as a script (``python llm_server.py``) it prints its base URL and serves until killed:
the end-to-end tests start it as a process.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Noted."


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Log:
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self, path: str) -> list[bytes]:
        with self.lock:
            return [entry.body for entry in self.received if entry.path.split("?")[0] == path]


def _anthropic(model: str) -> dict[str, Any]:
    return {
        "id": "msg_local",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": REPLY}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }


def _anthropic_events(model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {**_anthropic(model), "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    yield (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}},
    )
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _chat(model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def _chat_chunks(model: str) -> Iterator[dict[str, Any]]:
    base = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": 0, "model": model}
    yield {
        **base,
        "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": REPLY}, "finish_reason": None}
        ],
    }
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def _response(model: str) -> dict[str, Any]:
    return {
        "id": "resp_local",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_local",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": REPLY, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 2,
            "total_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _converse(model: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": REPLY}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
        "metrics": {"latencyMs": 1},
    }


def _converse_events() -> Iterator[tuple[str, dict[str, Any]]]:
    yield "messageStart", {"role": "assistant"}
    yield "contentBlockDelta", {"delta": {"text": REPLY}, "contentBlockIndex": 0}
    yield "contentBlockStop", {"contentBlockIndex": 0}
    yield "messageStop", {"stopReason": "end_turn"}
    usage = {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}
    yield "metadata", {"usage": usage, "metrics": {"latencyMs": 1}}


def _gemini(model: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": REPLY}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12},
        "modelVersion": model,
    }


def event_stream_message(event_type: str, payload: bytes) -> bytes:
    """One message of the AWS event stream framing (what Bedrock streams): a prelude (total
    and headers length, their CRC32), string headers, the payload, the message's CRC32."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        encoded = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07"
        headers += len(encoded).to_bytes(2, "big") + encoded
    total = 12 + len(headers) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


_BEDROCK = re.compile(r"/model/(?P<id>[^/]+)/(?P<op>[a-z-]+)$")
_MODEL_OP = re.compile(r"/models/(?P<id>[^/:]+):(?P<op>[A-Za-z]+)$")


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        self._keep(b"")
        self._json(200, {"ok": True})

    def do_POST(self) -> None:
        body = self._body()
        self._keep(body)
        path = self.path.split("?")[0]
        try:
            data = json.loads(body or b"{}")
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            data = {}
        model = str(data.get("model", "unknown")) if isinstance(data, dict) else "unknown"
        stream = isinstance(data, dict) and data.get("stream") is True
        if path.endswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": 42})
        elif path.endswith("/v1/messages"):
            if stream:
                self._events((name, event) for name, event in _anthropic_events(model))
            else:
                self._json(200, _anthropic(model))
        elif path.endswith("/chat/completions"):
            if stream:
                self._events([(None, chunk) for chunk in _chat_chunks(model)], done=True)
            else:
                self._json(200, _chat(model))
        elif path.endswith("/responses"):
            self._json(200, _response(model))
        elif (found := _BEDROCK.search(path)) is not None:
            self._bedrock(found["id"], found["op"])
        elif (found := _MODEL_OP.search(path)) is not None:
            self._model_op(found["id"], found["op"])
        else:
            self._json(200, {"echo": len(body)})

    def _bedrock(self, model: str, op: str) -> None:
        if op == "invoke":
            self._json(200, _anthropic(model))
        elif op == "invoke-with-response-stream":
            chunks = (
                ("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode()})
                for _, event in _anthropic_events(model)
            )
            self._event_stream(chunks)
        elif op == "converse":
            self._json(200, _converse(model))
        elif op == "converse-stream":
            self._event_stream(_converse_events())
        else:
            self._json(404, {"message": f"unknown operation {op}"})

    def _model_op(self, model: str, op: str) -> None:
        if op == "rawPredict":  # Vertex AI's Anthropic models
            self._json(200, _anthropic(model))
        elif op == "streamRawPredict":
            self._events(_anthropic_events(model))
        elif op == "generateContent":
            self._json(200, _gemini(model))
        elif op == "streamGenerateContent":
            self._events([(None, _gemini(model))])
        else:
            self._json(404, {"error": {"message": f"unknown operation {op}"}})

    def _event_stream(self, events: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, event in events:
            self.wfile.write(event_stream_message(name, json.dumps(event).encode()))
        self.wfile.flush()
        self.close_connection = True

    def _keep(self, body: bytes) -> None:
        log = self.server.log
        with log.lock:
            log.received.append(Received(self.command, self.path, dict(self.headers), body))

    def _json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _events(self, events: Any, done: bool = False) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, event in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log = Log()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serving() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


if __name__ == "__main__":
    with serving() as running:
        print(running.url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin
