"""The LiteLLM adapter: `litellm.completion(stream=True, tools=...)` normalised into StreamEvents.

LiteLLM is imported lazily (3.5 s, ~170 MB): only a worker that runs a step pays for it.

Measured here (scripted server, one text + one tool call, median of 30, same process): raw httpx
1.4-3.0 ms, LiteLLM as shipped 20.8 ms. Where it went (pyinstrument, cProfile): ~30 % in
`stream_chunk_builder` at end of stream (rebuilds the whole response for logging, runs the cost
calculator, which misses the price map for an unknown model and walks fallback "generalisations", then
deep-copies the response twice); a per-chunk `executor.submit` of success logging; CustomStreamWrapper's
per-chunk re-wrapping (pydantic model copies, role stripping) and `print_verbose` f-strings that format
every chunk even when not verbose; the OpenAI SDK's request transform and chunk model construction.
What we do about it:
  * `litellm.disable_streaming_logging = True` (no per-chunk logging task): 20.8 → 17.8 ms;
  * never let the end-of-stream rebuild run (stop at the finish chunk, drain the rest raw): → ~15 ms;
  * for an OpenAI-compatible api_base, read the OpenAI SDK stream LiteLLM returns directly instead of
    LiteLLM's wrapper (LiteLLM still builds and sends the request): → 6.8 ms;
  * cost from the price map ourselves, once, with a dict lookup (cost.py); retries are ours (max_retries=0).
The rest (~5 ms) is LiteLLM's request setup and the OpenAI SDK (param transform, chunk models).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

from hangar.engine.providers.assemble import StreamAssembler
from hangar.engine.providers.base import ProviderError, StreamEvent, Usage, is_retryable

_litellm = None
_lock = threading.Lock()


def litellm_module():
    global _litellm
    if _litellm is None:
        with _lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                litellm.disable_streaming_logging = True
                litellm.telemetry = False
                _litellm = litellm
    return _litellm


def _messages(system: list[str], messages: list[dict]) -> list[dict]:
    return [{"role": "system", "content": text} for text in system if text] + messages


def _usage_of(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    get = raw.get if isinstance(raw, dict) else lambda k, d=None: getattr(raw, k, d)
    details = get("completion_tokens_details") or {}
    prompt_details = get("prompt_tokens_details") or {}
    dget = details.get if isinstance(details, dict) else lambda k, d=None: getattr(details, k, d)
    pget = prompt_details.get if isinstance(prompt_details, dict) else lambda k, d=None: getattr(prompt_details, k, d)
    cached = pget("cached_tokens") or 0
    return Usage(input=max(0, (get("prompt_tokens") or 0) - cached), output=get("completion_tokens") or 0,
                 reasoning=dget("reasoning_tokens") or 0, cache_read=cached)


def _error(exc: Exception) -> ProviderError:
    status = getattr(exc, "status_code", None)
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    message = str(getattr(exc, "message", "") or exc)
    return ProviderError(message, status=status, retryable=is_retryable(status, message),
                         headers=dict(headers or {}), name=type(exc).__name__)


class LiteLLMModel:
    def __init__(self, *, provider_id: str, model_id: str, api_base: str = "", api_key: str = "",
                 timeout_s: float = 600.0):
        self.provider_id, self.model_id = provider_id, model_id
        self._api_base, self._api_key, self._timeout = api_base or None, api_key or None, timeout_s
        # Any OpenAI-compatible api_base: talk OpenAI wire format to it; else let LiteLLM route.
        self._model = f"openai/{model_id}" if api_base else f"{provider_id}/{model_id}"

    def _kwargs(self, temperature: float | None) -> dict:
        kwargs = {"model": self._model, "api_base": self._api_base, "api_key": self._api_key,
                  "timeout": self._timeout, "max_retries": 0}  # retries are the loop's (seed 000 §12)
        if temperature is not None:
            kwargs["temperature"] = temperature
        return kwargs

    def complete(self, *, system: list[str], messages: list[dict], temperature: float | None = None) -> str:
        litellm = litellm_module()
        try:
            response = litellm.completion(messages=_messages(system, messages), **self._kwargs(temperature))
        except Exception as exc:
            raise _error(exc) from exc
        return response.choices[0].message.content or ""

    def stream(self, *, system: list[str], messages: list[dict], tools: list[dict],
               abort: threading.Event, temperature: float | None = None) -> Iterator[StreamEvent]:
        litellm = litellm_module()
        kwargs = self._kwargs(temperature)
        if tools:
            kwargs["tools"] = tools
        try:
            response = litellm.completion(messages=_messages(system, messages), stream=True,
                                          stream_options={"include_usage": True}, **kwargs)
        except Exception as exc:
            raise _error(exc) from exc
        yield from self._events(response, abort)

    def _events(self, response: Any, abort: threading.Event) -> Iterator[StreamEvent]:
        raw, tapped = getattr(response, "completion_stream", None), {}
        response._hangar_raw, response._hangar_usage = raw, tapped
        # For an OpenAI-compatible api_base LiteLLM hands us the OpenAI SDK's own stream: read it directly.
        # LiteLLM built and sent the request (auth, api_base, params); its per-chunk re-wrapping
        # (CustomStreamWrapper: pydantic copies, role stripping, verbose-string formatting) is ~half of
        # its cost per call here and adds nothing for an OpenAI-wire stream.
        direct = self._api_base is not None and type(raw).__module__.startswith("openai")
        if raw is not None and not direct and not isinstance(raw, (str, bytes)):
            # LiteLLM only surfaces the provider's usage chunk through its end-of-stream rebuild, which we
            # skip (see module doc): read it off the raw provider stream on its way through.
            def tap():
                for chunk in raw:
                    if getattr(chunk, "usage", None):
                        tapped["usage"] = chunk.usage
                    yield chunk

            response.completion_stream = tap()
        done = threading.Event()
        threading.Thread(target=_close_on_abort, args=(response, abort, done), daemon=True,
                         name="llm-abort-watch").start()
        try:
            yield from self._read(raw if direct else response, abort, drain=None if direct else response)
        finally:
            done.set()

    def _read(self, stream: Any, abort: threading.Event, drain: Any = None) -> Iterator[StreamEvent]:
        """`stream` yields OpenAI-shaped chunks (the SDK's or LiteLLM's); `drain` is LiteLLM's wrapper,
        which is left at the finish chunk (its remaining raw chunks are drained unprocessed)."""
        usage, assembler = None, StreamAssembler()
        try:
            for chunk in stream:
                if abort.is_set():
                    break
                if getattr(chunk, "usage", None):
                    usage = chunk.usage
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                calls = [(c.index, c.id, c.function.name if c.function else None,
                          c.function.arguments if c.function else None) for c in delta.tool_calls or []]
                yield from assembler.feed(reasoning=getattr(delta, "reasoning_content", None), content=delta.content,
                                          tool_calls=calls, finish_reason=choice.finish_reason)
                if choice.finish_reason and drain is not None:
                    # Stop here and drain the provider's stream ourselves, so LiteLLM's end-of-stream
                    # rebuild (stream_chunk_builder, cost calculator, deep copies) never runs (module doc).
                    for _rest in drain.completion_stream or ():  # the provider's usage chunk, unprocessed
                        pass
                    break
        except ProviderError:
            raise
        except Exception as exc:
            if abort.is_set():
                return
            raise _error(exc) from exc
        finally:
            _close(drain if drain is not None else stream)
        if not abort.is_set():
            usage = usage or (drain._hangar_usage.get("usage") if drain is not None else None)
        yield from assembler.close(_usage_of(usage), aborted=abort.is_set())


def _close_on_abort(response: Any, abort: threading.Event, done: threading.Event) -> None:
    """A hung stream blocks in a socket read that no flag can interrupt: closing it can."""
    while not done.is_set():
        if abort.wait(0.25):
            _close(response)
            return


def _close(response: Any) -> None:
    stream = getattr(response, "_hangar_raw", None) or getattr(response, "completion_stream", None) or response
    for target in (getattr(stream, "response", None), stream):
        close = getattr(target, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                pass
            return
