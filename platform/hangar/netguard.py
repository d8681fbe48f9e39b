"""Where a model endpoint may point. A credential's `api_base` is chosen by a tenant, and the worker that
calls it sits next to the platform's own services (Postgres, Redis, the Docker bridge, the cloud's
metadata address): an endpoint that resolves to one of those would make the worker a request forger.

The rule is sandbox.netguard's, opened by HANGAR_MODEL_ALLOWED_NETWORKS (CIDRs: a self-hosted model on a
private address, the tests' scripted server on 127.0.0.1); the operator's own local model
(HANGAR_LOCAL_MODEL_URL) is exempt. The check runs on the resolved addresses twice: when the credential is
saved (a clear 400) and when a connection is opened, on the very address the socket connects to, so a
name that resolves elsewhere later (DNS rebinding) cannot slip through between the two.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Sequence

from django.conf import settings

from sandbox import netguard

BlockedAddress = netguard.Refused

# Named providers that LiteLLM, given no api_base, sends to the vendor's public API. Any other (ollama,
# llamafile, lemonade, lm_studio, xinference, vllm...) defaults to an address on the worker's own host or
# one read from the environment, through a client of LiteLLM's own that no guard is on: such a provider
# needs an explicit api_base, which is checked like any endpoint (`named_provider_refusal`).
PUBLIC_NAMED_PROVIDERS = frozenset(
    {
        "openai", "anthropic", "gemini", "mistral", "codestral", "groq", "deepseek", "xai", "cohere",
        "cohere_chat", "together_ai", "fireworks_ai", "perplexity", "openrouter", "deepinfra", "cerebras",
        "ai21", "ai21_chat", "huggingface", "replicate", "nvidia_nim", "moonshot", "dashscope", "novita",
        "sambanova", "nebius", "friendliai", "voyage", "vertex_ai", "bedrock",
    }
)  # fmt: skip


def named_provider_refusal(provider: str, api_base: str | None) -> str | None:
    """Why a call to `provider` without an api_base may not be made (None: it may)."""
    if api_base or provider in PUBLIC_NAMED_PROVIDERS:
        return None
    return (
        f"provider {provider[:60]!r} needs an api_base: without one it would connect to an address LiteLLM"
        " picks (often on this server itself), which is never checked. Set the credential's api_base."
    )


def _operator_endpoint() -> tuple[str, int] | None:
    url = getattr(settings, "HANGAR_LOCAL_MODEL_URL", "")
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    return (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def resolve(host: str, port: int) -> Sequence[netguard.AddrInfo]:
    """getaddrinfo's answers for host:port, every one of them checked (BlockedAddress names the first that
    is not allowed). The operator's own local model endpoint is exempt."""
    if _operator_endpoint() == (host, port):
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    allowed = netguard.networks(settings.HANGAR_MODEL_ALLOWED_NETWORKS)
    return netguard.resolve(
        host, port, allowed, setting="HANGAR_MODEL_ALLOWED_NETWORKS", what="the model endpoint "
    )


def connect(
    address: tuple[str, int], timeout: float | None = None, source_address: tuple[str, int] | None = None
) -> socket.socket:
    """socket.create_connection, on an address `resolve` checked: the name is resolved once, here, and
    the socket goes to that answer (http.client's `_create_connection` seam)."""
    return netguard.connect(resolve(*address), timeout, source_address)


def clean_api_base(value: str) -> str:
    """A credential's api_base as stored: an http(s) URL without credentials, query or fragment, whose
    host (when it resolves from here) is allowed. Raises ValueError saying what is wrong."""
    if not value:
        return ""
    parts, host, port = netguard.split_url(value, credentials_hint=": put the key in api_key")
    try:
        resolve(host, port)
    except BlockedAddress as exc:
        raise ValueError(str(exc)) from None
    except OSError:
        pass  # not resolvable from the web process (a name only the workers' network knows): checked at connect
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")
