"""Stored messages and parts → the chat messages a provider receives (seed 003 "Converting Messages to
LLM Format"), in OpenAI's wire format (LiteLLM translates for other providers).

- User: text parts (synthetic ones included), file parts as references (images and PDFs as content when
  the model takes them; a text file read for the prompt is in its synthetic text); a user message that arrived
  while the agent was mid-turn (after an assistant step that ended in tool calls) is wrapped in
  `<system-reminder>` (seed 003 "Mid-Loop User Messages").
- Assistant: text (reasoning is not replayed to OpenAI-compatible APIs), tool calls with their results;
  completed → output, error → the error text, pending/running → "[Tool execution was interrupted]"; what
  the results attached (images, PDFs) in a user message after them.
- Assistant messages with an error are skipped, unless aborted with substantive parts.
- The context epoch's mid-conversation system messages follow the message they were admitted after.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

INTERRUPTED = "[Tool execution was interrupted]"
CLEARED = "[Old tool result content cleared]"
ATTACHED = "The files attached by the tool results above:"


def _wrap(text: str) -> str:
    return f"<system-reminder>\nThe user sent the following message:\n{text}\n\nPlease address this message and continue with your tasks.\n</system-reminder>"


MEDIA = ("image/", "application/pdf")
READ_NOTE = "Called the Read tool with the following input: "  # a prompt's file read for it (prompt_files)


def _media(mime: str, url: str, name: str) -> dict[str, Any]:
    """An image or PDF (a data: URL) as a content item of OpenAI's chat format (LiteLLM translates it)."""
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"file_data": url, "filename": name}}


def _not_sent(name: str) -> str:
    return f"[{name} was not sent: this model does not take images or PDFs. Tell the user.]"


def _content(chunks: list[str], media: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    text = "\n\n".join(chunks)
    return [{"type": "text", "text": text}, *media] if media else text


def _user(parts: list[dict[str, Any]], mid_turn: bool, attachments: bool) -> dict[str, Any] | None:
    chunks: list[str] = []
    media: list[dict[str, Any]] = []
    read_for_it = any(p["type"] == "text" and p.get("text", "").startswith(READ_NOTE) for p in parts)
    for part in parts:
        if part["type"] == "text" and not part.get("ignored"):
            text = part["text"]
            chunks.append(_wrap(text) if mid_turn and not part.get("synthetic") else text)
        elif part["type"] == "file":
            name, mime, url = part.get("filename") or part["url"][:200], part["mime"], part["url"]
            if url.startswith("data:") and mime.startswith(MEDIA):
                if attachments:
                    media.append(_media(mime, url, name))
                else:
                    chunks.append(_not_sent(name))
            elif read_for_it and mime in ("text/plain", "application/x-directory"):
                continue  # its content is in the synthetic text read for it
            else:
                chunks.append(f"[Attached file: {name} ({mime}) at {url}]")
        elif part["type"] == "compaction":
            chunks.append("What did we do so far?")
        elif part["type"] == "subtask":
            chunks.append("The following tool was executed by the user")
    return {"role": "user", "content": _content(chunks, media)} if chunks or media else None


def _tool_output(state: dict[str, Any]) -> str:
    if state["status"] == "completed":
        return CLEARED if (state.get("time") or {}).get("compacted") else state["output"]
    if state["status"] == "error":
        return str(state["error"])

    return INTERRUPTED


def _tool_attachments(part: dict[str, Any]) -> list[dict[str, Any]]:
    state = part["state"]
    if state["status"] != "completed" or (state.get("time") or {}).get("compacted"):
        return []
    return [a for a in state.get("attachments") or () if str(a.get("url", "")).startswith("data:")]


def _assistant(info: dict[str, Any], parts: list[dict[str, Any]], attachments: bool) -> list[dict[str, Any]]:
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
    # A tool message carries text only: what a tool attached (an image or PDF `read`) follows the results
    # as a user message, as OpenCode does for providers that take no media in tool results.
    media = []
    for p in tools:
        content = _tool_output(p["state"])
        for attached in _tool_attachments(p):
            name = attached.get("filename") or p["state"].get("title") or "the file"
            if attachments:
                media.append(_media(attached["mime"], attached["url"], name))
            else:
                content += "\n\n" + _not_sent(name)
        out.append({"role": "tool", "tool_call_id": p["callID"], "content": content})
    if media:
        out.append({"role": "user", "content": [{"type": "text", "text": ATTACHED}, *media]})
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
    *,
    attachments: bool = False,
) -> list[dict[str, Any]]:
    """`history`: (message info, its parts) oldest first. `updates`: the context epoch's mid-conversation
    system messages by the id of the message each follows (hangar.engine.turn.system_context), sent after
    it (and its tool results) even when the message itself is not (a failed step). `attachments`: the
    model takes images and PDFs (hangar.engine.providers.catalogue); else each is named, not sent."""
    out: list[dict[str, Any]] = []
    mid_turn = False
    for info, parts in history:
        if info["role"] == "user":
            message = _user(parts, mid_turn, attachments)
            if message:
                out.append(message)
        else:
            out += _assistant(info, parts, attachments)
            mid_turn = info.get("finish") == "tool-calls" and not info.get("error")
        if updates and info["id"] in updates:
            out += [{"role": "system", "content": text} for text in updates[info["id"]]]
    return out
