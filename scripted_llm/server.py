"""The HTTP side: an OpenAI-compatible `/v1/chat/completions` that plays scripts (scripted_llm.scripts).

Stdlib `ThreadingHTTPServer`, HTTP/1.1 keep-alive with chunked SSE, and TCP_NODELAY on every accepted
socket: without it delayed ACKs add ~40 ms to each streamed response (ARCHITECTURE.md).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from scripted_llm.scripts import ScriptBook, tool_call_arguments


def _pieces(text: str, n: int = 3) -> list[str]:
    """Split text into up to n chunks so clients see real deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read /_requests instead
        pass

    # --- plumbing -------------------------------------------------------------------------------

    def _json(self, status: int, payload: Any, headers: dict | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _sse(self, payload: Any) -> None:
        self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    # --- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/_requests":
            script = parse_qs(url.query).get("script", [None])[0]
            self._json(200, self.server.book.requests(script))
        elif url.path in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        elif url.path == "/health":
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_DELETE(self) -> None:
        if urlparse(self.path).path == "/_requests":
            self.server.book.reset()
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        path = urlparse(self.path).path
        try:
            body = self._body()
        except ValueError:
            self._json(400, {"error": {"message": "invalid JSON"}})
            return
        if path == "/_scripts":
            try:
                scripts = body if isinstance(body, list) else [body]
                self._json(200, {"ids": [self.server.book.load(s) for s in scripts]})
            except ValueError as exc:
                self._json(400, {"error": {"message": str(exc)}})
        elif path in ("/v1/chat/completions", "/chat/completions"):
            self._complete(body)
        else:
            self._json(404, {"error": {"message": "not found"}})

    # --- completions ----------------------------------------------------------------------------

    def _complete(self, body: dict) -> None:
        book = self.server.book
        script = book.script_for(body)
        book.record(
            script["id"],
            {
                **body,
                "_user_agent": self.headers.get("User-Agent", ""),
                "_authorization": self.headers.get("Authorization", ""),
            },
        )
        turn = book.next_turn(script, body)
        for action in turn:  # delays and errors come before any byte of the answer
            if "delay" in action:
                time.sleep(float(action["delay"]))
            if "error" in action:
                status = int(action["error"])
                message = action.get("message", f"scripted error {status}")
                self._json(
                    status,
                    {"error": {"message": message, "type": "scripted", "code": action.get("code", status)}},
                    headers=action.get("headers"),
                )
                return
        if body.get("stream"):
            self._stream(body, turn)
        else:
            self._whole(body, turn)

    def _usage(self, body: dict, turn: list[dict], produced: int) -> dict:
        usage = {
            "prompt_tokens": len(json.dumps(body.get("messages", []))) // 4,
            "completion_tokens": max(1, produced // 4),
        }
        for action in turn:
            usage.update(action.get("usage", {}))
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return usage

    def _finish(self, turn: list[dict]) -> str:
        for action in turn:
            if "finish" in action:
                return action["finish"]
        return "tool_calls" if any("tool_calls" in a for a in turn) else "stop"

    def _whole(self, body: dict, turn: list[dict]) -> None:
        text = "".join(a.get("text", "") for a in turn)
        calls = [c for a in turn for c in a.get("tool_calls", [])]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": tool_call_arguments(c)},
                }
                for c in calls
            ]
        self._json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "message": message, "finish_reason": self._finish(turn)}],
                "usage": self._usage(body, turn, len(text) + sum(len(tool_call_arguments(c)) for c in calls)),
            },
        )

    def _stream(self, body: dict, turn: list[dict]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
        }

        def chunk(delta: dict, finish: str | None = None) -> None:
            self._sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        produced, tool_index = 0, 0
        try:
            chunk({"role": "assistant", "content": ""})
            for action in turn:
                produced += self._play_text(action, chunk)
                if "pause" in action:  # mid-answer: the text so far is already out
                    time.sleep(float(action["pause"]))
                for call in action.get("tool_calls", []):
                    produced += self._play_tool_call(call, tool_index, chunk)
                    tool_index += 1
                if "flood" in action:
                    produced += self._flood(chunk, action["flood"])
                if "hang" in action:
                    deadline = time.monotonic() + float(action["hang"])
                    while time.monotonic() < deadline:  # a write to a closed client raises: stop then
                        self._chunk(b": keepalive\n\n")
                        time.sleep(0.2)
            chunk({}, self._finish(turn))
            if (body.get("stream_options") or {}).get("include_usage"):
                self._sse({**base, "choices": [], "usage": self._usage(body, turn, produced)})
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _flood(self, chunk, spec: dict) -> int:
        """A hostile endpoint: `bytes` of output as `kind` (text | reasoning | tool | alternate: text and
        reasoning blocks of `piece` each | line: one SSE line that never ends | event: one event of many
        data lines), in `piece`-sized deltas."""
        total, piece, kind = int(spec["bytes"]), int(spec.get("piece", 65536)), spec.get("kind", "text")
        filler = "x" * piece
        sent = 0
        if kind == "tool":
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_flood",
                            "type": "function",
                            "function": {"name": "bash", "arguments": ""},
                        }
                    ]
                }
            )
        while sent < total:
            if kind == "line":
                self._chunk(b"data: " + filler.encode())
            elif kind == "event":
                self._chunk(b"data: " + filler.encode() + b"\n")
            elif kind == "tool":
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": filler}}]})
            elif kind == "alternate":
                chunk({"content" if (sent // piece) % 2 else "reasoning_content": filler})
            else:
                chunk({"reasoning_content" if kind == "reasoning" else "content": filler})
            sent += piece
        return sent

    @staticmethod
    def _play_text(action: dict, chunk) -> int:
        """Stream an action's reasoning, text and timestamp words; the characters produced."""
        produced = 0
        if "reasoning" in action:
            for piece in _pieces(action["reasoning"]):
                chunk({"reasoning_content": piece})
            produced += len(action["reasoning"])
        every = float(action.get("every", 0))
        if "text" in action:
            for piece in _pieces(action["text"]) if not every else action["text"].split(" "):
                chunk({"content": piece if not every else piece + " "})
                if every:
                    time.sleep(every)
            produced += len(action["text"])
        if "stamps" in action:  # N words `t<send time, epoch µs>` (bench/web_stream.py)
            for _ in range(int(action["stamps"])):
                chunk({"content": f"t{int(time.time() * 1e6)} "})
                produced += 18
                if every:
                    time.sleep(every)
        return produced

    @staticmethod
    def _play_tool_call(call: dict, index: int, chunk) -> int:
        """Stream one tool call: its name first, then its arguments in pieces; the characters produced."""
        arguments = tool_call_arguments(call)
        call_id = call.get("id") or f"call_{uuid.uuid4().hex[:12]}"
        chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(arguments, 4):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        return len(arguments)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], book: ScriptBook):
        super().__init__(address, _Handler)
        self.book = book

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # a client hanging up is not an error

    def get_request(self):
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


class ScriptedServer:
    """A running server on a background thread (tests embed it; `python -m scripted_llm` waits on it)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.book = ScriptBook()
        self._server = _Server((host, port), self.book)
        self.host, self.port = host, self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-llm", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def wait(self) -> None:
        self._thread.join()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve(host: str = "127.0.0.1", port: int = 0) -> ScriptedServer:
    return ScriptedServer(host, port).start()
