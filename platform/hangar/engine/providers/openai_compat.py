"""Direct adapter for an OpenAI-compatible `api_base` (custom providers, the local model, the scripted
server): one httpx request, SSE parsed as plain dicts, normalised into StreamEvents.

One httpx client per worker thread, not one per process: httpcore's pool is one shared structure whose
every request and every response close scan all its connections (polling each socket) under a lock, so
a worker streaming 100 sessions at once spent ~15 % of its CPU there (py-spy, bench/agent_load.py). A
thread runs one session's steps one after another: its own client keeps its connection alive across
them with nothing shared. The TLS context (CA bundle loaded: ~10 ms) is built once per process.

Why not LiteLLM here: with an explicit api_base LiteLLM only forwards to the OpenAI SDK in OpenAI wire
format, and per call the SDK's request transform (a recursive TypedDict walk over every message and tool
schema) plus its per-chunk pydantic models cost ~35 ms of worker CPU under the profiler, ~10 ms without,
about a third of a whole agent step (measured with bench/agent_step.py's script). This adapter does the
same request with the same retry/abort contract in well under 1 ms of CPU. Providers without an
api_base (anthropic/..., gemini/...) keep going through LiteLLMModel, which knows their wire formats.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator

import httpx

from hangar.engine.providers.assemble import openai_sse_events
from hangar.engine.providers.base import ProviderError, StreamEvent, is_retryable
from hangar.engine.providers.guard import guarded
from hangar.engine.providers.litellm_model import _messages, _usage_of

USER_AGENT = "hangar/0.1"
_local = threading.local()
_tls: ssl.SSLContext | None = None
_lock = threading.Lock()


def _tls_context() -> ssl.SSLContext:
    global _tls
    if _tls is None:
        with _lock:
            if _tls is None:
                _tls = httpx.create_ssl_context()  # what httpx.Client() would build for each client
    return _tls


def _http() -> httpx.Client:
    """This thread's client (keep-alive to the provider across the steps this thread runs)."""
    client = getattr(_local, "client", None)
    if client is None:
        client = _local.client = httpx.Client(verify=_tls_context(), headers={"User-Agent": USER_AGENT},
                                              limits=httpx.Limits(max_connections=8, max_keepalive_connections=4))
    return client


def _error_of(response: httpx.Response) -> ProviderError:
    try:
        body = json.loads(response.read() or b"{}")
        message = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else body.get("error")
    except (ValueError, AttributeError):
        message = None
    message = str(message or response.reason_phrase or f"HTTP {response.status_code}")
    return ProviderError(message, status=response.status_code, retryable=is_retryable(response.status_code, message),
                         headers=dict(response.headers), name="APIError")


def _transport_error(exc: Exception) -> ProviderError:
    """Same classification as LiteLLMModel's: no status, so only the message's words decide."""
    message = str(exc) or type(exc).__name__
    return ProviderError(message, retryable=is_retryable(None, message), name=type(exc).__name__)


class OpenAICompatModel:
    def __init__(self, *, provider_id: str, model_id: str, api_base: str, api_key: str = "", timeout_s: float = 600.0):
        self.provider_id, self.model_id = provider_id, model_id
        self._url = api_base.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, connect=30.0)

    def _body(self, system: list[str], messages: list[dict], temperature: float | None, **extra) -> dict:
        body = {"model": self.model_id, "messages": _messages(system, messages), **extra}
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def complete(self, *, system: list[str], messages: list[dict], temperature: float | None = None) -> str:
        try:
            response = _http().post(self._url, json=self._body(system, messages, temperature), headers=self._headers,
                                    timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise _transport_error(exc) from exc
        if response.status_code >= 400:
            raise _error_of(response)
        return response.json()["choices"][0]["message"].get("content") or ""

    def stream(self, *, system: list[str], messages: list[dict], tools: list[dict],
               abort: threading.Event, temperature: float | None = None) -> Iterator[StreamEvent]:
        body = self._body(system, messages, temperature, stream=True, stream_options={"include_usage": True},
                          **({"tools": tools} if tools else {}))
        request = _http().build_request("POST", self._url, json=body, headers=self._headers, timeout=self._timeout)
        try:
            response = _http().send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _transport_error(exc) from exc

        def events() -> Iterator[StreamEvent]:
            if response.status_code >= 400:
                raise _error_of(response)
            yield from openai_sse_events(response.iter_lines(), abort, _usage_of)

        yield from guarded(events(), abort=abort, close=response.close, to_error=_transport_error)
