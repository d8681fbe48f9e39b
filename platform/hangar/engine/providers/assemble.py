"""OpenAI-style stream deltas → StreamEvents, shared by both adapters (LiteLLM's SDK objects and the
direct adapter's dicts each extract the same four fields, then feed the assembler).

It opens and closes text/reasoning blocks as the delta kind changes, assembles tool calls whose
arguments arrive in pieces, and closes the step with a finish reason OpenCode understands."""

from __future__ import annotations

from collections.abc import Iterator

from hangar.engine.providers.base import StreamEvent, Usage

FINISH = {"tool_calls": "tool-calls", "function_call": "tool-calls", "content_filter": "content-filter"}


class StreamAssembler:
    def __init__(self) -> None:
        self.open_block = ""  # "text" | "reasoning" | ""
        self.calls: dict[int, dict] = {}
        self.finish = ""

    def _switch(self, block: str) -> Iterator[StreamEvent]:
        if self.open_block != block:
            if self.open_block:
                yield StreamEvent(f"{self.open_block}-end")
            self.open_block = block
            if block:
                yield StreamEvent(f"{block}-start")

    def feed(self, *, reasoning: str | None = None, content: str | None = None,
             tool_calls: list[tuple[int, str | None, str | None, str | None]] = (),
             finish_reason: str | None = None) -> Iterator[StreamEvent]:
        """One delta. `tool_calls` are (index, id, name, arguments piece) as the provider sent them."""
        if reasoning:
            yield from self._switch("reasoning")
            yield StreamEvent("reasoning-delta", text=reasoning)
        if content:
            yield from self._switch("text")
            yield StreamEvent("text-delta", text=content)
        for index, call_id, name, arguments in tool_calls:
            yield from self._switch("")
            slot = self.calls.get(index)
            if slot is None:
                slot = self.calls[index] = {"id": call_id or f"call_{index}", "name": name or "", "args": ""}
                yield StreamEvent("tool-input-start", id=slot["id"], name=slot["name"])
            if arguments:
                slot["args"] += arguments
                yield StreamEvent("tool-input-delta", id=slot["id"], text=arguments)
        if finish_reason:
            self.finish = finish_reason

    def close(self, usage: Usage, *, aborted: bool) -> Iterator[StreamEvent]:
        """End the open block and emit the complete tool calls; then finish-step unless aborted."""
        yield from self._switch("")
        for slot in self.calls.values():
            yield StreamEvent("tool-call", id=slot["id"], name=slot["name"], arguments=slot["args"] or "{}")
        if aborted:
            return
        finish = FINISH.get(self.finish, self.finish or ("tool-calls" if self.calls else "stop"))
        if self.calls and finish == "stop":
            finish = "tool-calls"
        yield StreamEvent("finish-step", finish=finish, usage=usage)
