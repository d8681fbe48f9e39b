"""Hangar events → OpenCode's SSE events (`data: {"id": "evt_…", "type": …, "properties": {…}}`).

Our publish payloads already use OpenCode's names; OpenCode 1.18.33 adds a few envelope fields that we
fill in here (checked against the OpenAPI `Event*` schemas and a capture of `opencode serve`):
- every session-scoped event's properties carry `sessionID`;
- `message.part.updated` carries `time` (ms);
- `session.error`'s error is one of OpenCode's variants (hangar.conversations.errors);
- token deltas are their own event, `message.part.delta {sessionID, messageID, partID, field, delta}`,
  not a `delta` key on `message.part.updated` (its schema forbids extra keys).
Event types OpenCode does not know are dropped: its clients validate the stream.
"""

import json
import time

from hangar.conversations.errors import opencode_error
from hangar.ids import ascending

# OpenCode 1.18.33 event types that Hangar can emit, with the property keys each schema allows.
ALLOWED = {
    "session.created": {"sessionID", "info"},
    "session.updated": {"sessionID", "info"},
    "session.deleted": {"sessionID", "info"},
    "session.status": {"sessionID", "status"},
    "session.idle": {"sessionID"},
    "session.error": {"sessionID", "error"},
    "session.diff": {"sessionID", "diff"},
    "session.compacted": {"sessionID"},
    "message.updated": {"sessionID", "info"},
    "message.removed": {"sessionID", "messageID"},
    "message.part.updated": {"sessionID", "part", "time"},
    "message.part.removed": {"sessionID", "messageID", "partID"},
    "message.part.delta": {"sessionID", "messageID", "partID", "field", "delta"},
    "permission.asked": {"id", "sessionID", "permission", "patterns", "metadata", "always", "tool"},
    "permission.replied": {"sessionID", "requestID", "reply"},
    "question.asked": {"id", "sessionID", "questions", "tool"},
    "question.replied": {"sessionID", "requestID", "answers"},
    "question.rejected": {"sessionID", "requestID"},
    "todo.updated": {"sessionID", "todos"},
}


def envelope(type: str, properties: dict) -> dict:
    return {"id": ascending("event"), "type": type, "properties": properties}


def server_connected() -> dict:
    return envelope("server.connected", {})


def to_opencode(event: dict) -> list[dict]:
    """One Hangar event (`{seq, type, payload, session, ephemeral?}`) as zero or more OpenCode events."""
    type_, payload, session_id = event.get("type"), dict(event.get("payload") or {}), event.get("session")

    if type_ == "message.part.updated" and "delta" in payload:
        delta = payload.pop("delta")
        part = payload.get("part") or {}
        if event.get("ephemeral"):
            # A streamed token: only the delta goes out; the final part follows at its boundary.
            return [_delta(session_id, part, delta)]
    if type_ == "message.part.delta":
        return [_delta(session_id, payload, payload.get("delta", ""))]
    if type_ not in ALLOWED:
        return []
    if session_id and "sessionID" in ALLOWED[type_]:
        payload.setdefault("sessionID", session_id)
    if type_ == "message.part.updated":
        payload.setdefault("time", int(time.time() * 1000))
    if type_ == "session.error" and "error" in payload:
        payload["error"] = opencode_error(payload["error"])  # Hangar's own names become UnknownError
    if type_ == "permission.replied" and "requestID" not in payload and "id" in payload:
        payload["requestID"] = payload.pop("id")
    properties = {k: v for k, v in payload.items() if k in ALLOWED[type_]}
    return [envelope(type_, properties)]


def _delta(session_id: str | None, part: dict, delta) -> dict:
    return envelope(
        "message.part.delta",
        {
            "sessionID": part.get("sessionID") or session_id,
            "messageID": part.get("messageID", ""),
            "partID": part.get("partID") or part.get("id", ""),
            "field": part.get("field", "text"),
            "delta": delta if isinstance(delta, str) else json.dumps(delta),
        },
    )


def sse(event: dict) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


KEEPALIVE = b": keepalive\n\n"
