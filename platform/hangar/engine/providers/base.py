"""The seam between the loop and a language model: a `Model` yields normalised `StreamEvent`s.

Event types (seed 003 "Streaming the Response"): text-start / text-delta / text-end,
reasoning-start / reasoning-delta / reasoning-end, tool-input-start / tool-input-delta, tool-call
(complete name + raw JSON arguments), finish-step (finish reason + usage). Provider failures are
raised as `ProviderError`; `retryable` drives the loop's backoff (seed 000 §12).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from hangar.engine.providers.redact import redact


@dataclass
class Usage:
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0
    estimated: bool = False  # counted by Hangar (hangar.engine.turn.step_usage), the server reported none


def estimate_tokens(text: str) -> int:
    """Tokens of a text, as OpenCode counts them without a tokenizer: a token is about four characters."""
    return round(len(text) / 4)


@dataclass
class StreamEvent:
    type: str
    text: str = ""  # deltas
    id: str = ""  # tool call id
    name: str = ""  # tool name
    arguments: str = ""  # tool-call: raw JSON arguments
    finish: str = ""  # finish-step: "stop" | "tool-calls" | "length" | ...
    usage: Usage = field(default_factory=Usage)


class ProviderError(Exception):
    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        headers: dict[str, str] | None = None,
        name: str = "APIError",
    ):
        message = redact(message)  # shown to every viewer of the session: no key shapes
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.name = name


class Model(Protocol):
    provider_id: str
    model_id: str

    def stream(
        self,
        *,
        system: list[str],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        abort: threading.Event,
        temperature: float | None = None,
    ) -> Iterator[StreamEvent]: ...

    def complete(
        self, *, system: list[str], messages: list[dict[str, Any]], temperature: float | None = None
    ) -> str:
        """One non-streaming answer (the hidden title agent)."""
        ...


def is_retryable(status: int | None, message: str) -> bool:
    """Seed 000 §12.1: 429, 5xx, overloaded / rate limit / exhausted / unavailable; never overflow."""
    text = message.lower()
    if "context" in text and ("overflow" in text or "too long" in text or "maximum context" in text):
        return False
    if status is not None and (status == 429 or status >= 500):
        return True
    return any(
        word in text
        for word in (
            "overloaded",
            "rate limit",
            "rate_limit",
            "too many requests",
            "exhausted",
            "unavailable",
        )
    )
