"""The LiteLLM adapter: `litellm.completion(stream=True, ...)` normalised into StreamEvents.

LiteLLM is imported lazily (seconds of import and a large share of a worker's memory): only a process
that makes a call through it pays for it (warm_up). LiteLLM builds
and sends every request (auth, api_base, params, message transforms, error mapping); how we read the
answer depends on the route:
  * an OpenAI-compatible api_base (`openai/<model>`): the provider's SSE bytes, read off the HTTP
    response and parsed and type-checked here (`_read_sse`): no chunk objects at all;
  * every other provider (anthropic/..., gemini/...): LiteLLM's CustomStreamWrapper, left at the finish
    chunk so its end-of-stream rebuild never runs (`_read`).

What this adapter does around LiteLLM, each for a cost bench/llm_call.py shows per call:
  * the SSE lines are read with json.loads, not through the OpenAI SDK's Stream (a pydantic model per
    chunk). The response is caught by an httpx response hook on our client (or taken from the SDK
    Stream's `.response`). After `[DONE]` the body is read to its end, so the keep-alive connection goes
    back to the pool (the SDK's Stream closes it, and every call would open a new connection);
  * tools go in `extra_body` (sent as they are) when LiteLLM would send them unchanged (`_plain_tools`):
    no string `pattern`/`patternProperties` (LiteLLM drops regexes Python cannot compile), no
    Anthropic-only keys, only function tools (LiteLLM routes MCP tools itself). That skips the SDK's
    `maybe_transform` walk of every schema. We never pass `tool_choice` (LiteLLM drops it when it sees
    no tools); prior tool calls in the history are messages, which LiteLLM still sees and transforms;
  * a pre-built client as `client=` (LiteLLM documents it; litellm_transport.py keeps it): no per-call
    client-cache lookup;
  * `disable_streaming_logging`, retries ours (max_retries=0), cost from the price map ourselves (cost.py).
On the OpenAI route the SDK's `maybe_transform` of the messages costs time that grows with every message
of a session; LiteLLM's own env flag EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER=True (read per call) sends
those requests with LiteLLM's HTTP handler instead of the SDK, which removes it. We turn the flag on unless
the environment sets it (the handler is the one LiteLLM already uses for most other providers);
`EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER=False` restores the SDK path. This adapter follows whichever
transport LiteLLM picks (tests run both).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from hangar import netguard
from hangar.engine.providers.assemble import StreamAssembler, openai_sse_events
from hangar.engine.providers.base import ProviderError, StreamEvent, Usage, is_retryable
from hangar.engine.providers.guard import guarded
from hangar.engine.providers.limits import bounded_lines, cap
from hangar.engine.providers.litellm_transport import client_for, last_http, litellm_module
from hangar.engine.providers.local import still_starting
from hangar.engine.providers.overflow import is_overflow, overflow_error
from hangar.engine.providers.redact import redact
from hangar.engine.providers.wire import usage_of, wire_messages

_plain_seen: dict[int, tuple[Any, bool]] = {}  # id(tool dict) → (the dict, _plain_tool verdict)
KEYLESS = "no-key"


def warm_up() -> None:
    """Import LiteLLM and make it load what it loads on a first call (its tokenizer, modules it imports
    inside functions): one streaming request, our way, to a closed local port, which fails at once. A
    process that skipped this would load them in its first burst of LiteLLM calls, in every thread at
    once, delaying every first step of the burst (bench/agent_load.py). Done once per process: at a
    worker's start when every call goes through LiteLLM (hangar.engine.tasks), else before the first
    call that does (a worker whose calls all go to OpenAI-compatible endpoints directly never loads it)."""
    if _warm.is_set() or getattr(_warming, "now", False):
        return
    with _warm_lock:  # the threads of a first burst wait for the one that warms up
        if _warm.is_set():
            return
        _warming.now = True
        try:
            litellm_module()
            model = LiteLLMModel(
                provider_id="warm-up", model_id="warm-up", api_base="http://127.0.0.1:9/v1", api_key="-"
            )
            try:
                list(
                    model.stream(
                        system=["-"],
                        messages=[{"role": "user", "content": "-"}],
                        tools=[],
                        abort=threading.Event(),
                    )
                )
            except ProviderError:
                pass  # connection refused: expected
        finally:
            _warming.now = False
            _warm.set()


_warm = threading.Event()
_warm_lock = threading.Lock()
_warming = threading.local()  # set in the thread warming up, whose own call comes back through stream()


def _plain_tools(tools: list[dict[str, Any]]) -> bool:
    """True when LiteLLM's OpenAI route would send these tools unchanged, so they can skip the SDK's
    transform in `extra_body` (module doc lists what LiteLLM rewrites). The verdict is kept per tool
    dict: the loop's schemas are shared, never-mutated dicts (tools.registry.tool_schemas)."""
    for tool in tools:
        hit = _plain_seen.get(id(tool))
        if hit is None or hit[0] is not tool:
            if len(_plain_seen) >= 4096:
                _plain_seen.clear()
            hit = _plain_seen[id(tool)] = (tool, _plain_tool(tool))
        if not hit[1]:
            return False
    return True


def _plain_tool(tool: Any) -> bool:
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        return False
    function = tool.get("function")
    if not isinstance(function, dict) or {"input_examples", "eager_input_streaming"} & (
        tool.keys() | function.keys()
    ):
        return False
    stack = [function.get("parameters")]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str) or "patternProperties" in node:
                return False
            stack.extend(value for value in node.values() if isinstance(value, (dict, list)))
        elif isinstance(node, list):
            stack.extend(node)
    return True


def _root_cause(exc: BaseException) -> ProviderError | None:
    """A refusal of ours (an endpoint netguard blocks, a response over a cap) that LiteLLM or the OpenAI
    SDK wrapped in an error of their own ("Connection error.", a 500): said as itself, not retried."""
    seen = 0
    link: BaseException | None = exc
    while link is not None and seen < 20:
        if isinstance(link, ProviderError):
            return link
        if isinstance(link, netguard.BlockedAddress):
            return ProviderError(str(link), retryable=False, name="APIError")
        link, seen = link.__cause__ or link.__context__, seen + 1
    return None


def _error(exc: Exception) -> ProviderError:
    ours = _root_cause(exc)
    if ours is not None:
        return ours
    status = getattr(exc, "status_code", None)
    headers = getattr(exc, "litellm_response_headers", None) or getattr(
        getattr(exc, "response", None), "headers", None
    )
    message = str(getattr(exc, "message", "") or exc)
    if is_overflow(message=message, status=status, code=getattr(exc, "code", None), name=type(exc).__name__):
        return overflow_error(message, status=status)
    return ProviderError(
        message,
        status=status,
        retryable=is_retryable(status, message),
        headers=dict(headers or {}),
        name=type(exc).__name__,
    )


class LiteLLMModel:
    def __init__(
        self,
        *,
        provider_id: str,
        model_id: str,
        api_base: str = "",
        api_key: str = "",
        timeout_s: float = 600.0,
    ):
        self.provider_id, self.model_id = provider_id, model_id
        # Never None: LiteLLM would fill a missing key in from the environment (ambient.py). A keyless
        # OpenAI-compatible endpoint gets a placeholder it ignores.
        self._api_base, self._api_key, self._timeout = api_base or None, api_key or KEYLESS, timeout_s
        # Any OpenAI-compatible api_base: talk OpenAI wire format to it; else let LiteLLM route.
        self._model = f"openai/{model_id}" if api_base else f"{provider_id}/{model_id}"
        self.last_usage: Usage | None = None  # of the last `complete` (the title call's ledger row)

    def _kwargs(self, temperature: float | None) -> dict[str, Any]:
        refusal = netguard.named_provider_refusal(self.provider_id, self._api_base)
        if refusal:  # before LiteLLM picks an address, on a client no guard is on
            raise ProviderError(refusal, name="ProviderAuthError")
        kwargs = {
            "model": self._model,
            "api_base": self._api_base,
            "api_key": self._api_key,
            "timeout": self._timeout,
            "max_retries": 0,
        }  # retries are the loop's (seed 000 §12)
        client = client_for(self._api_base, self._api_key) if self._api_base is not None else None
        if client is not None:
            kwargs["client"] = client
        if temperature is not None:
            kwargs["temperature"] = temperature
        return kwargs

    def _error(self, exc: Exception) -> ProviderError:
        error = _error(exc)
        if error.status is None:  # no answer at all: the bundled model may still be building
            error = still_starting(self._api_base) or error
        error.message = redact(error.message, self._api_key or "")
        error.args = (error.message,)
        return error

    def complete(
        self, *, system: list[str], messages: list[dict[str, Any]], temperature: float | None = None
    ) -> str:
        litellm = litellm_module()
        try:
            response = litellm.completion(
                messages=wire_messages(system, messages, provider_id=self.provider_id),
                **self._kwargs(temperature),
            )
        except Exception as exc:
            raise self._error(exc) from exc
        finally:
            last_http.response = None
        self.last_usage = usage_of(getattr(response, "usage", None))
        return response.choices[0].message.content or ""

    def stream(
        self,
        *,
        system: list[str],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        abort: threading.Event,
        temperature: float | None = None,
    ) -> Iterator[StreamEvent]:
        warm_up()
        litellm = litellm_module()
        kwargs = self._kwargs(temperature)
        if tools and self._api_base is not None and _plain_tools(tools):
            kwargs["extra_body"] = {"tools": tools}
        elif tools:
            kwargs["tools"] = tools
        last_http.response = None
        try:
            response = litellm.completion(
                messages=wire_messages(system, messages, provider_id=self.provider_id),
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
        except Exception as exc:
            _close(last_http.response)  # an error response LiteLLM raised on: give its connection back
            raise self._error(exc) from exc
        finally:
            http, last_http.response = last_http.response, None
        if http is None:  # not sent on our client: the OpenAI SDK's Stream still holds its response
            http = getattr(getattr(response, "completion_stream", None), "response", None)
        if self._api_base is not None and _is_stream_of(http):
            # The provider's SSE stream, parsed and type-checked here (assemble.openai_sse_events).
            # httpx's own iter_lines buffers a line of any length: split the (capped) bytes ourselves.
            lines = bounded_lines(
                http.iter_bytes(),
                max_line=cap("HANGAR_MODEL_MAX_EVENT_BYTES"),
                max_total=cap("HANGAR_MODEL_MAX_RESPONSE_BYTES"),
            )
            events = openai_sse_events(lines, abort, usage_of)
            yield from guarded(events, abort=abort, close=lambda: _close(http), to_error=_error)
        else:
            yield from self._events(response, abort)

    def _events(self, response: Any, abort: threading.Event) -> Iterator[StreamEvent]:
        raw = getattr(response, "completion_stream", None)
        tapped: dict[str, Any] = {}
        response._hangar_raw, response._hangar_usage = raw, tapped
        if raw is not None and not isinstance(raw, (str, bytes)):
            # LiteLLM only surfaces the provider's usage chunk through its end-of-stream rebuild, which we
            # skip (see _read): read it off the raw provider stream on its way through.
            def tap() -> Iterator[Any]:
                for chunk in raw:
                    if getattr(chunk, "usage", None):
                        tapped["usage"] = chunk.usage
                    yield chunk

            response.completion_stream = tap()
        yield from guarded(
            self._read(response, abort), abort=abort, close=lambda: _close(response), to_error=_error
        )

    def _read(self, wrapper: Any, abort: threading.Event) -> Iterator[StreamEvent]:
        """LiteLLM's CustomStreamWrapper yields OpenAI-shaped chunks; it is left at the finish chunk and the
        provider's remaining raw chunks are drained unprocessed, so LiteLLM's end-of-stream rebuild
        (stream_chunk_builder, cost calculator, deep copies of every chunk) never runs."""

        usage, assembler = None, StreamAssembler()
        for chunk in wrapper:
            if abort.is_set():
                break
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            delta = choice.delta
            calls = [
                (
                    c.index,
                    c.id,
                    c.function.name if c.function else None,
                    c.function.arguments if c.function else None,
                )
                for c in delta.tool_calls or []
            ]
            yield from assembler.feed(
                reasoning=getattr(delta, "reasoning_content", None),
                content=delta.content,
                tool_calls=calls,
                finish_reason=choice.finish_reason,
            )
            if choice.finish_reason:
                for _rest in wrapper.completion_stream or ():  # the provider's usage chunk, unprocessed
                    pass
                break
        if not abort.is_set():
            usage = usage or wrapper._hangar_usage.get("usage")
        yield from assembler.close(usage_of(usage), aborted=abort.is_set())


def _is_stream_of(http: Any) -> bool:
    """The response our hook captured is this call's open chat-completions stream."""
    try:
        return (
            not http.is_closed
            and http.request.url.path.endswith("/chat/completions")
            and "text/event-stream" in http.headers.get("content-type", "")
        )
    except AttributeError:
        return False


def _close(response: Any) -> None:
    stream = (
        getattr(response, "_hangar_raw", None) or getattr(response, "completion_stream", None) or response
    )
    for target in (getattr(stream, "response", None), stream):
        close = getattr(target, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                pass
            return
