"""OpenAI chat-completions wire helpers shared by the direct adapter and the LiteLLM adapter."""

from __future__ import annotations

from typing import Any

from hangar.engine.providers.base import Usage

# Providers whose chat API takes a system message anywhere in the conversation. Elsewhere (Anthropic and
# Gemini through LiteLLM hoist every system message to the top; many local servers' chat templates refuse
# one after the first turn) a mid-conversation system message is sent as a wrapped user message.
NATIVE_SYSTEM_PROVIDERS = frozenset({"openai", "azure"})


def wire_messages(
    system: list[str], messages: list[dict[str, Any]], *, provider_id: str = ""
) -> list[dict[str, Any]]:
    """The system texts as leading system messages, then the conversation, its mid-conversation system
    messages (hangar.engine.turn.system_context) lowered to what the provider takes (seed 001)."""
    lead = [{"role": "system", "content": text} for text in system if text]
    if provider_id in NATIVE_SYSTEM_PROVIDERS or not any(m["role"] == "system" for m in messages):
        return lead + messages
    return lead + [
        {"role": "user", "content": f"<system-reminder>\n{m['content']}\n</system-reminder>"}
        if m["role"] == "system"
        else m
        for m in messages
    ]


def usage_of(raw: Any) -> Usage:
    """OpenAI's usage object (dict or SDK object) as ours: cached prompt tokens are not input."""
    if raw is None:
        return Usage()
    get = raw.get if isinstance(raw, dict) else lambda k, d=None: getattr(raw, k, d)
    details = get("completion_tokens_details") or {}
    prompt_details = get("prompt_tokens_details") or {}
    dget = details.get if isinstance(details, dict) else lambda k, d=None: getattr(details, k, d)
    pget = (
        prompt_details.get
        if isinstance(prompt_details, dict)
        else lambda k, d=None: getattr(prompt_details, k, d)
    )
    cached = pget("cached_tokens") or 0
    return Usage(
        input=max(0, (get("prompt_tokens") or 0) - cached),
        output=get("completion_tokens") or 0,
        reasoning=dget("reasoning_tokens") or 0,
        cache_read=cached,
    )
