"""Stored messages and parts → the chat messages a provider receives (seed 003 "Converting Messages to
LLM Format"), in OpenAI's wire format (LiteLLM translates for other providers).

- User: text parts (synthetic ones included), file parts as references; a user message that arrived
  while the agent was mid-turn (after an assistant step that ended in tool calls) is wrapped in
  `<system-reminder>` (seed 003 "Mid-Loop User Messages").
- Assistant: text (reasoning is not replayed to OpenAI-compatible APIs), tool calls with their results;
  completed → output, error → the error text, pending/running → "[Tool execution was interrupted]".
- Assistant messages with an error are skipped, unless aborted with substantive parts.
- The context epoch's mid-conversation system messages follow the message they were admitted after.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

INTERRUPTED = "[Tool execution was interrupted]"
CLEARED = "[Old tool result content cleared]"


def _wrap(text: str) -> str:
    return f"<system-reminder>\nThe user sent the following message:\n{text}\n\nPlease address this message and continue with your tasks.\n</system-reminder>"


def _user(parts: list[dict[str, Any]], mid_turn: bool) -> dict[str, Any] | None:
    chunks = []
    for part in parts:
        if part["type"] == "text" and not part.get("ignored"):
            text = part["text"]
            chunks.append(_wrap(text) if mid_turn and not part.get("synthetic") else text)
        elif part["type"] == "file":
            name = part.get("filename") or part["url"]
            chunks.append(f"[Attached file: {name} ({part['mime']}) at {part['url']}]")
        elif part["type"] == "compaction":
            chunks.append("What did we do so far?")
        elif part["type"] == "subtask":
            chunks.append("The following tool was executed by the user")
    return {"role": "user", "content": "\n\n".join(chunks)} if chunks else None


def _tool_output(state: dict[str, Any]) -> str:
    if state["status"] == "completed":
        return CLEARED if (state.get("time") or {}).get("compacted") else state["output"]
    if state["status"] == "error":
        return str(state["error"])

    return INTERRUPTED


def _assistant(info: dict[str, Any], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    error = info.get("error")
    substantive = any(p["type"] in ("text", "tool") for p in parts)
    if error and not (error.get("name") == "MessageAbortedError" and substantive):
        return []
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    tools = [p for p in parts if p["type"] == "tool"]
    out: list[dict[str, Any]] = []
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tools:
        message["tool_calls"] = [
            {
                "id": p["callID"],
                "type": "function",
                "function": {"name": p["tool"], "arguments": json.dumps(p["state"].get("input", {}))},
            }
            for p in tools
        ]
    if message["content"] is None and not tools:
        return []
    out.append(message)
    out += [{"role": "tool", "tool_call_id": p["callID"], "content": _tool_output(p["state"])} for p in tools]
    return out


def is_summary(info: dict[str, Any]) -> bool:
    """A completed compaction summary: the boundary of the history a model is sent."""
    return bool(info.get("summary") and info.get("finish") and not info.get("error"))


def boundary(infos: list[dict[str, Any]]) -> int:
    """Index of the first message the model is sent: the compaction request answered by the latest
    completed summary (seed 003 "filterCompacted"), else 0. `infos`: message data, oldest first."""
    summarized: set[str] = set()
    for index in range(len(infos) - 1, -1, -1):
        info = infos[index]
        if info["role"] == "assistant" and is_summary(info):
            summarized.add(info["parentID"])
        elif info["role"] == "user" and info["id"] in summarized:
            return index
    return 0


def since_boundary(
    history: list[tuple[dict[str, Any], list[dict[str, Any]]]],
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The history from the latest compaction on: the compaction request, its summary, and what followed."""
    return history[boundary([info for info, _parts in history]) :]


def to_model_messages(
    history: list[tuple[dict[str, Any], list[dict[str, Any]]]],
    updates: Mapping[str, list[str]] | None = None,
) -> list[dict[str, Any]]:
    """`history`: (message info, its parts) oldest first. `updates`: the context epoch's mid-conversation
    system messages by the id of the message each follows (hangar.engine.system_context), sent after
    it (and its tool results) even when the message itself is not (a failed step)."""
    out: list[dict[str, Any]] = []
    mid_turn = False
    for info, parts in history:
        if info["role"] == "user":
            message = _user(parts, mid_turn)
            if message:
                out.append(message)
        else:
            out += _assistant(info, parts)
            mid_turn = info.get("finish") == "tool-calls" and not info.get("error")
        if updates and info["id"] in updates:
            out += [{"role": "system", "content": text} for text in updates[info["id"]]]
    return out
