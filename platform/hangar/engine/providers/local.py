"""A call to the bundled local model while deploy/local-model.sh is still building it: a clear error with
the estimate (hangar.local_model), not a retried "connection refused"."""

from __future__ import annotations

from hangar import local_model
from hangar.engine.providers.base import ProviderError


def still_starting(api_base: str | None) -> ProviderError | None:
    """The error for a call to `api_base` that could not connect, when that is the local model and it is
    not serving yet. Not retryable: the run ends at once with the message (retries would only hide it)."""
    message = local_model.not_ready_message(api_base) if api_base else None
    return ProviderError(message, retryable=False, name="LocalModelStarting") if message else None
