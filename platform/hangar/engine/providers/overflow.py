"""A provider's "the prompt does not fit" answer, recognised across providers (seed 003 "Cross-Provider
Overflow Detection"). Such an error is never retried: the same request would fail the same way. The loop
compacts the session instead (hangar.engine.run.compaction).

The patterns are OpenCode's list (provider/error.ts) plus the forms LiteLLM and OpenAI-compatible local
servers use; each names the provider that says it that way."""

from __future__ import annotations

import re

from hangar.engine.providers.base import ProviderError

NAME = "ContextOverflowError"  # OpenCode's error name on the message (its OpenAPI `ContextOverflowError`)

_PATTERNS = re.compile(
    "|".join(
        (
            r"prompt is too long",  # Anthropic
            r"input is too long for requested model",  # Amazon Bedrock
            r"exceeds the context window",  # OpenAI (chat completions and responses)
            r"input token count.*exceeds the maximum",  # Google Gemini
            r"maximum prompt length is \d+",  # xAI
            r"reduce the length of the messages",  # Groq
            r"maximum context length",  # OpenAI, OpenRouter, DeepSeek, vLLM ("maximum context length is N")
            r"exceeds the limit of \d+",  # GitHub Copilot
            r"exceeds the available context size",  # llama.cpp server
            r"greater than the context length",  # LM Studio
            r"context window exceeds limit",  # MiniMax
            r"exceeded model token limit",  # Moonshot, Kimi
            r"context[_ ]length[_ ]exceeded",  # OpenAI's error code, and a generic form
            r"context ?window ?exceeded",  # LiteLLM's ContextWindowExceededError text
            r"too many tokens in the (?:prompt|input)",
            r"request entity too large",  # HTTP 413 from a gateway
        )
    ),
    re.IGNORECASE,
)
_CLASS_NAMES = {"ContextWindowExceededError", NAME}  # LiteLLM's exception class; ours


def is_overflow(*, message: str, status: int | None = None, code: object = None, name: str = "") -> bool:
    """The provider said the request's context is too large for the model."""
    if name in _CLASS_NAMES or status == 413:
        return True
    if isinstance(code, str) and code.lower() == "context_length_exceeded":
        return True
    return bool(_PATTERNS.search(message or ""))


def overflow_error(message: str, *, status: int | None = None) -> ProviderError:
    return ProviderError(message, status=status, retryable=False, name=NAME)


def is_overflow_error(exc: ProviderError) -> bool:
    return exc.name == NAME
