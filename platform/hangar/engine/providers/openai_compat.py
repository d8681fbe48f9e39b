"""Direct adapter for an OpenAI-compatible `api_base` (custom providers, the local model, the scripted
server): one HTTP request (hangar.engine.providers.http), SSE parsed as plain dicts, normalised into
StreamEvents.

Why not LiteLLM here: with an explicit api_base LiteLLM only forwards to the OpenAI SDK in OpenAI wire
format, and per call the SDK's request transform (a recursive TypedDict walk over every message and tool
schema) plus its per-chunk pydantic models grow with the session and outweigh the rest of an agent step's
work in the worker (bench/llm_call.py and bench/step_cpu.py print both transports). This adapter does the
same request with the same retry/abort contract, parsing plain dicts. Providers without an

api_base (anthropic/..., gemini/...) keep going through LiteLLMModel, which knows their wire formats.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from hangar.engine.providers import http
from hangar.engine.providers.assemble import openai_sse_events
from hangar.engine.providers.base import ProviderError, StreamEvent, Usage, is_retryable
from hangar.engine.providers.guard import guarded
from hangar.engine.providers.limits import TooLarge, cap
from hangar.engine.providers.local import still_starting
from hangar.engine.providers.overflow import is_overflow, overflow_error
from hangar.engine.providers.redact import redact
from hangar.engine.providers.wire import usage_of, wire_messages

USER_AGENT = http.USER_AGENT


def _error_of(response: http.Response) -> ProviderError:
    code = None
    try:
        body = json.loads(response.read(http.MAX_ERROR_BODY) or b"{}")
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        code = error.get("code") if isinstance(error, dict) else None
    except (ValueError, AttributeError, http.HTTPError):
        message = None
    message = str(message or response.reason or f"HTTP {response.status}")
    if is_overflow(message=message, status=response.status, code=code):
        return overflow_error(message, status=response.status)
    return ProviderError(
        message,
        status=response.status,
        retryable=is_retryable(response.status, message),
        headers=response.headers,
        name="APIError",
    )


def _transport_error(exc: Exception) -> ProviderError:
    """Same classification as LiteLLMModel's: no status, so only the message's words decide."""
    message = str(exc) or type(exc).__name__
    return ProviderError(message, retryable=is_retryable(None, message), name=type(exc).__name__)


def _answer_text(body: object) -> str:
    """The text of a non-streamed chat completion, its shape checked (a wrong one is a ProviderError)."""
    try:
        content = body["choices"][0]["message"].get("content")  # type: ignore[index]
    except (TypeError, KeyError, IndexError, AttributeError):
        raise ProviderError(
            f"malformed completion from the provider: {str(body)[:200]!r}", name="APIError"
        ) from None
    if content is not None and not isinstance(content, str):
        raise ProviderError(
            "malformed completion from the provider: content is not a string", name="APIError"
        )
    return content or ""


class OpenAICompatModel:
    def __init__(
        self, *, provider_id: str, model_id: str, api_base: str, api_key: str = "", timeout_s: float = 600.0
    ):
        self.provider_id, self.model_id = provider_id, model_id
        self._api_base = api_base
        self._url = api_base.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._key = api_key
        self._timeout = timeout_s
        self.last_usage: Usage | None = None  # of the last `complete` (the title call's ledger row)

    def _post(self, body: dict[str, Any]) -> http.Response:
        try:
            response = http.post(
                self._url, json.dumps(body).encode(), self._headers, read_timeout=self._timeout
            )
        except http.HTTPError as exc:
            raise still_starting(self._api_base) or _transport_error(exc) from exc
        if response.status >= 400:
            try:
                error = _error_of(response)
            finally:
                response.close()
            error.message = redact(error.message, self._key)
            error.args = (error.message,)
            raise error
        return response

    def _body(
        self, system: list[str], messages: list[dict[str, Any]], temperature: float | None, **extra: Any
    ) -> dict[str, Any]:

        body = {
            "model": self.model_id,
            "messages": wire_messages(system, messages, provider_id=self.provider_id),
            **extra,
        }
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def complete(
        self, *, system: list[str], messages: list[dict[str, Any]], temperature: float | None = None
    ) -> str:
        response = self._post(self._body(system, messages, temperature))
        limit = cap("HANGAR_MODEL_MAX_RESPONSE_BYTES")
        try:
            raw = response.read(limit + 1)
        except http.HTTPError as exc:
            raise _transport_error(exc) from exc
        finally:
            response.close()
        if len(raw) > limit:
            raise TooLarge("the response body", limit)
        try:
            body = json.loads(raw)
        except ValueError:
            raise ProviderError(
                f"the provider's answer is not JSON: {raw[:200]!r}", name="APIError"
            ) from None
        self.last_usage = usage_of(body.get("usage") if isinstance(body, dict) else None)
        return _answer_text(body)

    def stream(
        self,
        *,
        system: list[str],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        abort: threading.Event,
        temperature: float | None = None,
    ) -> Iterator[StreamEvent]:
        response = self._post(
            self._body(
                system,
                messages,
                temperature,
                stream=True,
                stream_options={"include_usage": True},
                **({"tools": tools} if tools else {}),
            )
        )
        lines = response.lines(max_total=cap("HANGAR_MODEL_MAX_RESPONSE_BYTES"))
        events = openai_sse_events(lines, abort, usage_of)
        yield from guarded(events, abort=abort, close=response.close, to_error=_transport_error)
