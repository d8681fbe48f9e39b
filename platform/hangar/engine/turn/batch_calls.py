"""Batch sub-calls as tool calls of their own (tools/base.py `SubcallRunner`, seed 000 §6.4): each gets a
tool part (call id "<batch call>-<index>"), so a batch re-run after a permission reply returns the stored
results of the sub-calls that completed instead of running them twice."""

from __future__ import annotations

import json
import threading
from typing import Any, Protocol

from django.db import close_old_connections

from hangar.conversations import loop_selectors as reads
from hangar.conversations.models import Message
from hangar.conversations.services import now_ms
from hangar.engine.tools.base import PermissionAsked, PermissionRejected, SubcallRunner, ToolError, ToolResult


class Calls(Protocol):
    """What a batch's sub-calls need of the step's runner (hangar.engine.turn.tool_calls.ToolCalls): its
    message, its part writes and its execution of one call."""

    message: Message

    def save(self, part: dict[str, Any], **state: Any) -> dict[str, Any]: ...

    def fail(self, part: dict[str, Any], args: dict[str, Any], start: int, error: str) -> dict[str, Any]: ...

    def execute(
        self, tool_name: str, args: dict[str, Any], call_id: str, part_ref: dict[str, Any]
    ) -> ToolResult: ...


def subcall_runner(calls: Calls, parent_call: str) -> SubcallRunner:
    lock = threading.Lock()

    def run_subcall(tool: str, parameters: dict[str, Any], *, index: int) -> ToolResult:
        close_old_connections()
        call_id = f"{parent_call}-{index}"
        existing = reads.tool_part_by_call(calls.message, call_id)
        if existing and existing.data["state"]["status"] == "completed":
            s = existing.data["state"]
            return ToolResult(title=s["title"], output=s["output"], metadata=s["metadata"])
        base = {
            "id": existing.pk if existing else None,
            "type": "tool",
            "callID": call_id,
            "tool": tool,
            "metadata": {"batchChild": True},
        }
        with lock:
            pending = calls.save(
                {k: v for k, v in base.items() if v is not None},
                status="pending",
                input=parameters,
                raw=json.dumps(parameters),
            )
        start = now_ms()
        running = calls.save(pending, status="running", input=parameters, time={"start": start})
        try:
            result = calls.execute(tool, parameters, call_id, running)
        except PermissionAsked:
            raise
        except (ToolError, PermissionRejected) as exc:
            calls.fail(running, parameters, start, str(exc))
            raise ToolError(str(exc)) from exc
        calls.save(
            running,
            status="completed",
            input=parameters,
            output=result.output,
            title=result.title,
            metadata=result.metadata,
            time={"start": start, "end": now_ms()},
        )
        return result

    return run_subcall
