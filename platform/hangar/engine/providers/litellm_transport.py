"""LiteLLM itself, as this process holds it: the lazy import (with the settings we give it) and the
transport its OpenAI route sends through. One HTTPHandler per process (LiteLLM's own, pooled, with our
response hook and the endpoint guards), or, when LiteLLM's base-handler flag is off, an OpenAI SDK client
on the same httpx client, cached per (api_base, key). Separate from the adapter (litellm_model.py), which
turns one call's answer into StreamEvents: this module owns what lives across calls.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from types import ModuleType
from typing import Any

from hangar.engine.providers import ambient

BASE_HANDLER_FLAG = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
_litellm = None
_lock = threading.Lock()
_client_lock = threading.Lock()
_handler = None  # LiteLLM's HTTPHandler around our httpx client (see client_for)
_sdk_clients: OrderedDict[tuple[str, str], Any] = OrderedDict()  # (api_base, api_key) → openai.OpenAI, LRU
_SDK_CLIENTS_MAX = 256
last_http = threading.local()  # the last HTTP response this thread's client received (event hook)


def litellm_module() -> ModuleType:
    global _litellm
    if _litellm is None:
        with _lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                # LiteLLM's own HTTP handler for the OpenAI route (module doc). Set the variable to
                # False to go back to the OpenAI SDK.
                os.environ.setdefault(BASE_HANDLER_FLAG, "True")
                ambient.scrub()
                import litellm

                litellm.suppress_debug_info = True
                litellm.disable_streaming_logging = True
                litellm.telemetry = False
                _litellm = litellm
    return _litellm


def _remember(response: Any) -> None:
    last_http.response = response


def _http_handler() -> Any:  # litellm's HTTPHandler (litellm ships no types)
    """One LiteLLM HTTPHandler per process: its httpx client is built by LiteLLM (SSL, proxy and
    User-Agent settings), pooled across calls, and carries our response hook."""
    global _handler
    if _handler is None:
        with _client_lock:
            if _handler is None:
                from litellm.llms.custom_httpx.http_handler import HTTPHandler

                _handler = HTTPHandler(timeout=600.0)
    client = _handler.client  # LiteLLM rebuilds it if it was closed: (re)attach the hook and guards
    from hangar.engine.providers import httpx_guard

    httpx_guard.install(client)
    if _remember not in client.event_hooks["response"]:
        client.event_hooks = {**client.event_hooks, "response": [*client.event_hooks["response"], _remember]}
    return _handler


def client_for(api_base: str, api_key: str | None) -> Any:
    """The `client=` for LiteLLM's OpenAI route: its own HTTPHandler when LiteLLM's base-handler flag is
    on, else an OpenAI SDK client on the same httpx client (cached per api_base and key)."""
    from litellm.secret_managers.main import get_secret_bool

    handler = _http_handler()
    if get_secret_bool(BASE_HANDLER_FLAG):  # the exact test LiteLLM applies to pick its transport
        return handler
    if api_key is None:
        return None  # LiteLLM resolves a default key (litellm.api_key, OPENAI_API_KEY): let it
    key = (api_base, api_key)
    with _client_lock:
        client = _sdk_clients.get(key)
        if client is not None:
            _sdk_clients.move_to_end(key)
            return client
    import openai

    client = openai.OpenAI(api_key=api_key, base_url=api_base, max_retries=0, http_client=handler.client)
    with _client_lock:
        _sdk_clients[key] = client
        while len(_sdk_clients) > _SDK_CLIENTS_MAX:
            _sdk_clients.popitem(last=False)  # the shared httpx client stays open
    return client
