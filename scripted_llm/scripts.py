"""Scripts and the choice of the next turn.

A script is `{"id": str, "turns": [turn, ...], "title": str?, "loop": bool?, "shared": bool?}`; a turn is a list of
actions, played in order:

    {"delay": 2.0}                                    sleep before what follows
    {"text": "hello"}                                 stream text deltas (split in a few chunks)
    {"text": "a b c", "every": 0.01}                  one delta per word, `every` seconds apart
    {"pause": 1.0}                                    sleep mid-stream (what came before is sent)
    {"stamps": 1000, "every": 0.005}                  N words `t<send time in epoch µs>`, one per delta
    {"reasoning": "thinking..."}                      stream reasoning_content deltas
    {"tool_calls": [{"name": "bash", "arguments": {...} | "raw json", "id": "call_1"?}]}
    {"error": 429, "headers": {"retry-after-ms": "50"}, "message": "slow down"}   reply with an error status
    {"error": 400, "code": "context_length_exceeded", "message": "..."}   ... and an error code of choice
    {"hang": 300}                                     keep the stream open (keepalives) up to N seconds
    {"flood": {"bytes": 200000000, "kind": "text"}}   a hostile answer of that size (server._flood)
    {"usage": {"prompt_tokens": 10, "completion_tokens": 5}}   override reported usage
    {"finish": "stop"}                                override the finish reason

Which script: the request's model (`scripted/<id>` or `<id>`), else a `[[script:<id>]]` marker in any
user message, else the default script (a single text answer). Which turn: each conversation (script id
+ the first user message's text) has its own counter, so many sessions share one script concurrently
and each plays it from the start; a retried request consumes the next turn (so error turns work).
A `shared` script keeps one counter for all its requests instead: a conversation whose first user message
changes (a compacted history starts at its summary) goes on with the next turn.
Requests whose system prompt mentions "title generator" are answered with the script's `title`; a script
with a `summary` answers compaction requests (system prompt "summarizing conversations") with it, without
using a turn, so a long script's turns stay in step across compactions.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import defaultdict, deque
from typing import Any

MARKER = re.compile(r"\[\[script:([A-Za-z0-9_.\-]+)\]\]")
DEFAULT_SCRIPT = {"id": "default", "turns": [[{"text": "OK."}]], "loop": True}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class ScriptBook:
    """Thread-safe store of scripts, per-conversation turn counters and the request log."""

    def __init__(self, keep_requests: int = 2000):
        self._lock = threading.Lock()
        self._scripts: dict[str, dict] = {"default": DEFAULT_SCRIPT}
        self._counters: dict[str, int] = defaultdict(int)
        self._requests: dict[str, deque] = defaultdict(lambda: deque(maxlen=keep_requests))

    def load(self, script: dict) -> str:
        if not isinstance(script.get("turns"), list) or not script.get("id"):
            raise ValueError("a script needs an id and a list of turns")
        with self._lock:
            self._scripts[script["id"]] = script
            for key in [k for k in self._counters if k.startswith(script["id"] + "|")]:
                del self._counters[key]
            self._requests.pop(script["id"], None)
        return script["id"]

    def script_for(self, body: dict) -> dict:
        model = str(body.get("model", ""))
        candidates = [model.removeprefix("scripted/"), model.rsplit("/", 1)[-1]]
        for message in body.get("messages", []):
            if message.get("role") == "user":
                candidates += MARKER.findall(_text_of(message.get("content")))
        with self._lock:
            for candidate in candidates:
                if candidate in self._scripts:
                    return self._scripts[candidate]
            return self._scripts["default"]

    @staticmethod
    def is_title_request(body: dict) -> bool:
        system = " ".join(
            _text_of(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system"
        )
        return "title generator" in system.lower()

    @staticmethod
    def is_summary_request(body: dict) -> bool:
        system = " ".join(
            _text_of(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system"
        )
        return "summarizing conversations" in system.lower()

    def next_turn(self, script: dict, body: dict) -> list[dict]:
        if self.is_title_request(body):
            return [{"text": script.get("title", "Scripted session")}]
        if script.get("summary") and self.is_summary_request(body):
            return [{"text": script["summary"]}]
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        first = _text_of(users[0].get("content")) if users else ""
        key = script["id"] + "|" + ("" if script.get("shared") else hashlib.sha1(first.encode()).hexdigest())
        with self._lock:
            index = self._counters[key]
            self._counters[key] += 1
        turns = script["turns"]
        if index < len(turns):
            return turns[index]
        if script.get("loop") and turns:
            return turns[index % len(turns)]
        return [{"text": "(script exhausted)"}]

    def record(self, script_id: str, body: dict) -> None:
        with self._lock:
            self._requests[script_id].append(body)

    def requests(self, script_id: str | None) -> list[dict]:
        with self._lock:
            if script_id:
                return list(self._requests.get(script_id, []))
            return [r for q in self._requests.values() for r in q]

    def reset(self) -> None:
        with self._lock:
            self._counters.clear()
            self._requests.clear()


def tool_call_arguments(call: dict) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)
