"""One model stream → parts of the step's assistant message (seed 003 "How Parts Are Created During
Streaming").

Text and reasoning deltas go out on the ephemeral path, coalesced (at most one notification per
FLUSH_S per part); the part is persisted once, at its end. Tool calls become `pending` tool parts when
their arguments are complete (stored by the tool runner with the first call's start); names are
repaired (case) or routed to `invalid` (seed 000 §12.3).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hangar.conversations import services as store
from hangar.conversations.events import publish_ephemeral
from hangar.conversations.models import Message, Session
from hangar.conversations.services import now_ms
from hangar.engine.providers.base import StreamEvent, Usage
from hangar.engine.tools.base import Tool
from hangar.ids import new_part_id

FLUSH_S = 0.05


@dataclass
class StepResult:
    finish: str = "unknown"
    usage: Usage = field(default_factory=Usage)
    tool_calls: int = 0
    produced: bool = False  # any part written (a retry after this would duplicate output)
    output_chars: int = 0  # text, reasoning and tool arguments streamed: the usage estimate's output
    tool_parts: list[dict[str, Any]] = field(default_factory=list)  # pending, not yet stored (see _tool_call)


class StreamProcessor:
    def __init__(self, session: Session, message: Message, tools: dict[str, Tool]) -> None:
        self.session, self.message, self.tools = session, message, tools
        self.result = StepResult()
        self._open: dict[str, Any] | None = None
        self._pending_delta = ""
        self._last_flush = 0.0

    def _flush(self) -> None:
        if self._open is not None and self._pending_delta:
            publish_ephemeral(
                self.session, "message.part.updated", {"part": self._open, "delta": self._pending_delta}
            )
            self._pending_delta = ""
            self._last_flush = time.monotonic()

    def _start_block(self, kind: str) -> dict[str, Any]:
        self._open = block = {
            "id": new_part_id(),
            "sessionID": self.session.pk,
            "messageID": self.message.pk,
            "type": kind,
            "text": "",
            "time": {"start": now_ms()},
        }
        self._pending_delta = ""
        self._last_flush = time.monotonic()
        return block

    def _delta(self, text: str) -> None:
        block = self._open if self._open is not None else self._start_block("text")
        block["text"] += text
        self._pending_delta += text
        self.result.output_chars += len(text)
        if time.monotonic() - self._last_flush >= FLUSH_S:
            self._flush()

    def _end_block(self) -> None:
        if self._open is None:
            return
        self._flush()
        part, self._open = self._open, None
        part["text"] = part["text"].strip() if part["type"] == "reasoning" else part["text"]
        part["time"]["end"] = now_ms()
        if part["text"]:
            store.part_upsert(message=self.message, data=part)
            self.result.produced = True

    def _tool_call(self, event: StreamEvent) -> None:
        from hangar.engine.tools.registry import offered_names, repair_tool_name

        offered = offered_names(self.tools)
        name = repair_tool_name(event.name, offered)
        # OpenCode 1.18.33's words (measured with `opencode run` on the scripted model): the AI SDK's
        # errors, which list every tool it holds, `invalid` included, sorted.
        try:
            args = json.loads(event.arguments or "{}")
            error = None if isinstance(args, dict) else "the arguments must be a JSON object"
        except json.JSONDecodeError as exc:
            args, error = {}, f"JSON parsing failed: Text: {event.arguments}.\nError message: {exc}"
        if name is None or error:
            reason = (
                f"Invalid input for tool {name}: {error}"
                if name is not None
                else f"Model tried to call unavailable tool '{event.name}'. "
                f"Available tools: {', '.join(sorted(self.tools))}."
            )
            args = {"tool": event.name, "error": reason}
            name = "invalid"
        # Not written here: the tool runner stores every pending call together with the first one's
        # `running` state, in one statement (nothing runs between the stream's end and that write).
        self.result.tool_parts.append(
            {
                "id": new_part_id(),
                "type": "tool",
                "callID": event.id,
                "tool": name,
                "state": {"status": "pending", "input": args, "raw": event.arguments or ""},
            }
        )
        self.result.tool_calls += 1
        self.result.output_chars += len(event.arguments or "")
        self.result.produced = True

    def consume(self, events: Iterable[StreamEvent]) -> StepResult:
        for event in events:
            kind = event.type
            if kind in ("text-start", "reasoning-start"):
                self._end_block()
                self._start_block(kind.split("-")[0])
            elif kind in ("text-delta", "reasoning-delta"):
                self._delta(event.text)
            elif kind in ("text-end", "reasoning-end"):
                self._end_block()
            elif kind == "tool-call":
                self._end_block()
                self._tool_call(event)
            elif kind == "finish-step":
                self._end_block()
                self.result.finish, self.result.usage = event.finish, event.usage
        self._end_block()
        return self.result
