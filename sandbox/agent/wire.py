"""Output side of the agent's wire protocol and the errors handlers raise."""

from __future__ import annotations

import json
import threading


class BadRequest(Exception):
    """The request itself is wrong (missing or mistyped argument)."""


class OpError(Exception):
    """The request is fine but could not be carried out; `kind` names the driver-side error."""

    def __init__(self, message: str, kind: str = "SandboxError") -> None:
        super().__init__(message)
        self.kind = kind


def arg(args: dict, name: str, kind, default=...):
    """Fetch a typed argument, raising BadRequest when it is missing or of the wrong type."""
    if name not in args or args[name] is None:
        if default is ...:
            raise BadRequest(f"missing argument {name!r}")
        return default
    value = args[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest(f"argument {name!r} must be {getattr(kind, '__name__', kind)}")
    return value


class Writer:
    """Serialises whole lines onto stdout; the id goes first so clients can filter cheaply."""

    def __init__(self, out) -> None:
        self.out = out
        self.lock = threading.Lock()

    def _send(self, rid, body: dict) -> None:
        head = '{"id":' + json.dumps(rid)
        rest = json.dumps(body, ensure_ascii=False, separators=(",", ":"))[1:]
        # The leading newline ends whatever junk a dropped reader left in the pipe (connection.py).
        line = ("\n" + head + ("," + rest if rest != "}" else "}") + "\n").encode("utf-8", "replace")
        with self.lock:
            try:
                self.out.write(line)
            except (BrokenPipeError, OSError):
                pass  # nobody attached; replies are fire-and-forget

    def reply(self, rid, result) -> None:
        self._send(rid, {"ok": True, "result": result})

    def error(self, rid, kind: str, message: str) -> None:
        self._send(rid, {"ok": False, "error": {"type": kind, "message": message}})

    def frame(self, rid, event: str, **fields) -> None:
        self._send(rid, {"ev": event, **fields})
