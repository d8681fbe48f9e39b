"""OpenAI-style stream deltas → StreamEvents, shared by both adapters (each extracts the same four fields
of a delta, then feeds the assembler), and the raw OpenAI wire format: server-sent events and the
type-checked fields of a chat-completion chunk (`sse_data`, `chunk_fields`, `delta_fields`).

It opens and closes text/reasoning blocks as the delta kind changes, assembles tool calls whose
arguments arrive in pieces, and closes the step with a finish reason OpenCode understands."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from hangar.engine.providers.base import ProviderError, StreamEvent, Usage, is_retryable
from hangar.engine.providers.limits import TooLarge, cap

MAX_CALLS = 256  # tool calls in one answer (each becomes a part and a tool run)
FINISH = {"tool_calls": "tool-calls", "function_call": "tool-calls", "content_filter": "content-filter"}


class StreamAssembler:
    """Caps (limits.py): a text or reasoning block's characters, a tool call's argument characters."""

    def __init__(self) -> None:
        self.open_block = ""  # "text" | "reasoning" | ""
        self.block_size = 0
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish = ""
        self.max_part = cap("HANGAR_MODEL_MAX_PART_CHARS")
        self.max_args = cap("HANGAR_MODEL_MAX_TOOL_ARGS_CHARS")

    def _grow(self, text: str) -> None:
        self.block_size += len(text)
        if self.block_size > self.max_part:
            raise TooLarge(f"a {self.open_block} part", self.max_part, "characters")

    def _switch(self, block: str) -> Iterator[StreamEvent]:
        if self.open_block != block:
            if self.open_block:
                yield StreamEvent(f"{self.open_block}-end")
            self.open_block, self.block_size = block, 0
            if block:
                yield StreamEvent(f"{block}-start")

    def feed(
        self,
        *,
        reasoning: str | None = None,
        content: str | None = None,
        tool_calls: Sequence[tuple[int, str | None, str | None, str | None]] = (),
        finish_reason: str | None = None,
    ) -> Iterator[StreamEvent]:
        """One delta. `tool_calls` are (index, id, name, arguments piece) as the provider sent them."""
        if reasoning:
            yield from self._switch("reasoning")
            self._grow(reasoning)
            yield StreamEvent("reasoning-delta", text=reasoning)
        if content:
            yield from self._switch("text")
            self._grow(content)
            yield StreamEvent("text-delta", text=content)
        for index, call_id, name, arguments in tool_calls:
            yield from self._switch("")
            slot = self.calls.get(index)
            if slot is None:
                if len(self.calls) >= MAX_CALLS:
                    raise TooLarge("one answer's tool calls", MAX_CALLS, "calls")
                slot = self.calls[index] = {"id": call_id or f"call_{index}", "name": name or "", "args": []}
                slot["size"] = 0
                yield StreamEvent("tool-input-start", id=slot["id"], name=slot["name"])
            if arguments:
                slot["size"] += len(arguments)
                if slot["size"] > self.max_args:
                    raise TooLarge(f"tool call {slot['id']}'s arguments", self.max_args, "characters")
                slot["args"].append(
                    arguments
                )  # joined once at the end: += would copy the whole string each time
                yield StreamEvent("tool-input-delta", id=slot["id"], text=arguments)
        if finish_reason:
            self.finish = finish_reason

    def close(self, usage: Usage, *, aborted: bool) -> Iterator[StreamEvent]:
        """End the open block and emit the complete tool calls; then finish-step unless aborted."""
        yield from self._switch("")
        for slot in self.calls.values():
            yield StreamEvent(
                "tool-call", id=slot["id"], name=slot["name"], arguments="".join(slot["args"]) or "{}"
            )
        if aborted:
            return
        finish = FINISH.get(self.finish, self.finish or ("tool-calls" if self.calls else "stop"))
        if self.calls and finish == "stop":
            finish = "tool-calls"
        yield StreamEvent("finish-step", finish=finish, usage=usage)


# --- the OpenAI wire format, parsed from the raw stream --------------------------------------------


class MalformedChunk(ValueError):
    """A stream chunk that is not the OpenAI chat-completion-chunk shape; the message says what is wrong."""


def sse_data(lines: Iterable[str], max_event: int | None = None) -> Iterator[str]:
    """The data of each server-sent event, up to `[DONE]`.

    WHATWG event-stream rules, as the OpenAI SDK applies them: `data:` lines (one optional space after the
    colon) are joined by newlines and dispatched at a blank line; comments (`:` keep-alives) and the other
    fields (`event:`, `id:`, `retry:`) are skipped. A last event not closed by a blank line still counts.
    After `[DONE]` the rest of the body is read and dropped: an HTTP response closed before its end costs
    its keep-alive connection (a new TCP + TLS handshake on the next call); a rest over the body's cap is
    left unread (the connection is dropped). An event's data over `max_event` bytes is a TooLarge."""
    max_event = max_event or cap("HANGAR_MODEL_MAX_EVENT_BYTES")
    data: list[str] = []
    size = 0
    lines = iter(lines)
    for line in lines:
        if line:
            if line.startswith("data:"):
                piece = line[6:] if line.startswith("data: ") else line[5:]
                size += len(piece) + 1
                if size > max_event:
                    raise TooLarge("one server-sent event", max_event)
                data.append(piece)
            continue
        if data:
            joined = "\n".join(data)
            data, size = [], 0
            if joined.startswith("[DONE]"):
                try:
                    for _rest in lines:
                        pass
                except TooLarge:
                    pass
                return
            yield joined
    if data:
        joined = "\n".join(data)
        if not joined.startswith("[DONE]"):
            yield joined


def _text(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise MalformedChunk(f"{what} is {type(value).__name__}, not a string")


def chunk_fields(chunk: object) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the error or None, usage or None) of one parsed chunk, checking that it is an object."""
    if not isinstance(chunk, dict):
        raise MalformedChunk(f"a chunk is {type(chunk).__name__}, not an object")
    usage = chunk.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise MalformedChunk(f"usage is {type(usage).__name__}, not an object")
    error = chunk.get("error")
    return (error if isinstance(error, dict) else {"message": str(error)}) if error else None, usage


def delta_fields(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """The first choice's delta as `StreamAssembler.feed` keyword arguments, or None for a chunk without
    choices (the usage chunk). Every field is type-checked: a wrong shape raises MalformedChunk."""
    choices = chunk.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise MalformedChunk(f"choices is {type(choices).__name__}, not a list")
    if not choices:
        return None
    if not isinstance(choices[0], dict):
        raise MalformedChunk("choices is not a list of objects")
    choice = choices[0]
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise MalformedChunk(f"delta is {type(delta).__name__}, not an object")
    tool_calls = delta.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise MalformedChunk(f"tool_calls is {type(tool_calls).__name__}, not a list")
    calls = []
    for call in tool_calls:
        if not isinstance(call, dict):
            raise MalformedChunk(f"a tool call delta is {type(call).__name__}, not an object")
        function, index = call.get("function") or {}, call.get("index", 0)
        if not isinstance(function, dict) or not isinstance(index, int) or isinstance(index, bool):
            raise MalformedChunk("a tool call delta is not {index: int, function: object}")
        calls.append(
            (
                index,
                _text(call.get("id"), "a tool call id"),
                _text(function.get("name"), "a tool name"),
                _text(function.get("arguments"), "tool call arguments"),
            )
        )
    reasoning = delta.get("reasoning_content")
    if reasoning is None and isinstance(delta.get("reasoning"), str):
        reasoning = delta["reasoning"]  # vLLM, Ollama, OpenRouter spell it so (an extension: never fatal)
    return {
        "reasoning": _text(reasoning, "reasoning"),
        "content": _text(delta.get("content"), "content"),
        "tool_calls": calls,
        "finish_reason": _text(choice.get("finish_reason"), "finish_reason"),
    }


def _malformed(reason: str, data: str) -> ProviderError:
    shown = data if len(data) <= 200 else data[:200] + "…"
    return ProviderError(f"malformed stream chunk from the provider ({reason}): {shown!r}", name="APIError")


def openai_sse_events(
    lines: Iterable[str], abort: threading.Event, usage_of: Callable[[dict[str, Any] | None], Usage]
) -> Iterator[StreamEvent]:
    """An OpenAI chat-completion SSE body → StreamEvents. Each event's JSON is type-checked: a malformed
    one is a ProviderError naming what is wrong, a mid-stream `{"error": ...}` one with its status code
    (retryable by the usual rules). Usage may follow the finish chunk, so the body is read to its end."""
    usage, assembler = None, StreamAssembler()
    for data in sse_data(lines):
        if abort.is_set():
            break
        try:
            chunk = json.loads(data)
            error, chunk_usage = chunk_fields(chunk)
            fields = None if error else delta_fields(chunk)
        except ValueError as exc:  # json's JSONDecodeError and MalformedChunk
            raise _malformed(
                str(exc) if isinstance(exc, MalformedChunk) else f"not JSON: {exc}", data
            ) from exc
        if error:
            message = str(error.get("message") or "the provider reported an error mid-stream")
            code = error.get("code")
            status = code if isinstance(code, int) and 400 <= code < 600 else None
            raise ProviderError(
                message, status=status, retryable=is_retryable(status, message), name="APIError"
            )
        if chunk_usage:
            usage = chunk_usage
        if fields is not None:
            yield from assembler.feed(**fields)
    yield from assembler.close(usage_of(usage), aborted=abort.is_set())
