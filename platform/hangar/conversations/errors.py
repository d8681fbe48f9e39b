"""A turn's error in OpenCode's shape: one of the named variants an assistant message's `error` (and
OpenCode's `session.error`) may hold in OpenCode 1.18.33 (ProviderAuthError, UnknownError, APIError, ...).

Hangar names some errors of its own (BudgetExceededError, ModelNotAllowedError, WorkspaceError, a model
still starting, ...): they keep their names and extra data on Hangar's own `session.error` event (the web
app, the webhooks), and become an `UnknownError` carrying their message wherever OpenCode's shape is owed
(a stored message, OpenCode's event stream), since OpenCode's clients know no other names.
"""

from __future__ import annotations

from typing import Any

# Each variant's `data` keys (OpenCode 1.18.33's schema; every one forbids other keys) and those required.
_VARIANTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "ProviderAuthError": (frozenset({"providerID", "message"}), frozenset({"providerID", "message"})),
    "UnknownError": (frozenset({"message", "ref"}), frozenset({"message"})),
    "MessageOutputLengthError": (frozenset(), frozenset()),
    "MessageAbortedError": (frozenset({"message"}), frozenset({"message"})),
    "StructuredOutputError": (frozenset({"message", "retries"}), frozenset({"message", "retries"})),
    "ContextOverflowError": (frozenset({"message", "responseBody"}), frozenset({"message"})),
    "ContentFilterError": (frozenset({"message"}), frozenset({"message"})),
    "APIError": (
        frozenset({"message", "statusCode", "isRetryable", "responseHeaders", "responseBody", "metadata"}),
        frozenset({"message", "isRetryable"}),
    ),
}


def error_message(error: Any) -> str:
    """What an error says, whatever its shape."""
    if isinstance(error, dict):
        data = error.get("data")
        if isinstance(data, dict) and data.get("message"):
            return str(data["message"])
        return str(error.get("message") or error.get("name") or "The run failed.")
    return str(error or "The run failed.")


def opencode_error(error: Any) -> dict[str, Any]:
    """`error` as one of OpenCode's variants: a known name with the data that variant allows (its
    required keys present), else an UnknownError carrying the message."""
    if isinstance(error, dict) and error.get("name") in _VARIANTS:
        allowed, required = _VARIANTS[error["name"]]
        raw = error.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        kept = {k: v for k, v in data.items() if k in allowed and v is not None}
        if error["name"] == "APIError" and not isinstance(kept.get("statusCode"), int):
            kept.pop("statusCode", None)
        if required <= kept.keys():
            return {"name": error["name"], "data": kept}
    return {"name": "UnknownError", "data": {"message": error_message(error)}}
