"""An in-process `Model` (hangar.engine.providers.base) that plays a script: the loop's fast tier drives
the real loop with it instead of the scripted HTTP server (tests/engine/conftest.py, the end-to-end tier).

A script is a list of turns, one per model call; a turn is a list of items, played in order:
    {"text": "..."}                          a text block
    {"tool_calls": [{"name", "id", "arguments"}]}   tool calls (the turn then finishes "tool-calls"); str
                                                   arguments are sent verbatim
    {"usage": {"input": 10, "output": 2}}    the step's token counts
    {"error": ProviderError(...)}            the call fails (raised before anything else is streamed)
    {"do": callable}                         called mid-stream with the abort event (abort, a new prompt...)
"""

from __future__ import annotations

import json
import threading

from hangar.engine.providers.base import StreamEvent, Usage


class ScriptedModel:
    provider_id = "scripted"
    model_id = "fast"

    def __init__(self, turns: list[list[dict]], title: str = "Scripted title"):
        self.turns = list(turns)
        self.title = title
        self.requests: list[dict] = []  # what each call was sent: system, messages, tools

    def stream(self, *, system, messages, tools, abort: threading.Event, temperature=None):
        self.requests.append({"system": system, "messages": messages, "tools": tools})
        if not self.turns:
            raise AssertionError("the loop called the model more often than the script plays")
        return self._play(self.turns.pop(0), abort)

    def _play(self, turn: list[dict], abort: threading.Event):
        finish, usage = "stop", Usage()
        for item in turn:
            if "error" in item:
                raise item["error"]
            if "do" in item:
                item["do"](abort)
            if "text" in item:
                yield StreamEvent("text-start")
                yield StreamEvent("text-delta", text=item["text"])
                yield StreamEvent("text-end")
            for call in item.get("tool_calls", []):
                raw = call["arguments"]  # a str is sent as it is (a model's broken JSON)
                yield StreamEvent(
                    "tool-call",
                    id=call["id"],
                    name=call["name"],
                    arguments=raw if isinstance(raw, str) else json.dumps(raw),
                )
                finish = "tool-calls"
            if "usage" in item:
                usage = Usage(**item["usage"])
        yield StreamEvent("finish-step", finish=finish, usage=usage)

    def complete(self, *, system, messages, temperature=None) -> str:
        return self.title


def call(name: str, call_id: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}
