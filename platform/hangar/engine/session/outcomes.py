"""How a turn ends. The loop (hangar.engine.run.loop) raises one of these from wherever the turn's fate is
decided; `Loop.run` is the one place that maps them to what the session shows. A step that continues the
turn (its model call ended in tool calls) returns normally instead.

`PermissionAsked` (hangar.engine.tools.base) is an ending too, raised by a tool's permission check: the
run parks, the session stays busy with a pending request, and the reply re-enqueues the run.
"""

from __future__ import annotations

from typing import Any


class TurnEnded(Exception):
    """Base of every way a turn ends (other than parking on a permission request)."""

    # How the audit log's session.finished row names this ending.
    outcome = "ended"


class Finished(TurnEnded):
    """The last step ended the turn: its finish reason is not one that continues ("stop", "length"...),
    or it ended in an error (a provider failure an earlier run recorded)."""

    outcome = "finished"

    def __init__(self, reason: str = ""):
        super().__init__(reason)
        self.reason = reason


class NothingToAnswer(TurnEnded):
    """The session holds no user message."""


class Aborted(TurnEnded):
    """A person asked to stop (the API) or the lease was lost (the keeper): the abort event is set."""

    outcome = "aborted"


class Stopped(TurnEnded):
    """A person rejected a tool call without feedback: the step is closed with finish "stop". A dismissed
    question (`keep_finish`) keeps the step's own finish ("tool-calls"), as OpenCode's blocked turn does."""

    outcome = "stopped"

    def __init__(self, *, keep_finish: bool = False):
        super().__init__()
        self.keep_finish = keep_finish


class MaxSteps(TurnEnded):
    """The agent's step limit was reached and its last, tool-less step still asked for tools."""

    outcome = "max_steps"


class Failed(TurnEnded):
    """A turn that fails, with its error (`{"name", "data": {"message", ...}}`, any name: Hangar's own
    names are shaped for OpenCode where its shape is owed). `Loop.run` tells every one the same way
    (hangar.engine.run.failures): the prompt is answered by an assistant message carrying the error (unless
    the failed step's own message carries it), `session.error` is published, the session goes idle.
    Raise it (or a subclass) from anywhere in a step for a new cause: nothing else needs to know."""

    outcome = "error"

    def __init__(self, error: dict[str, Any]):
        super().__init__(error)
        self.error = error


class ProviderFailed(Failed):
    """The model call failed for good (not retryable, retries exhausted, or failed after producing
    output): the step's message carries the error."""


class ModelUnavailable(Failed):
    """The model could not be resolved (e.g. no credential for its provider): the person can act on it.
    Raised before any step: the prompt's answer is an error message."""


class ContextUnavailable(Failed):
    """The session's first system context (or a fresh one after a compaction) could not be read from its
    sandbox: the turn is not started on an incomplete baseline; a new prompt (or a retry) runs it."""


class SandboxFailed(Failed):
    """The session's sandbox could not be attached or started (e.g. the org's sandbox disk budget is
    used up) where the step cannot go on without it."""


class BudgetBlocked(Failed):
    """A hard budget leaves no room for the next model call (hangar.usage.gate): the call is not made
    (audited, BudgetExceededError); the session ends idle, its status saying `{"blocked": "budget"}`."""

    outcome = "blocked"

    def __init__(self, error: dict[str, Any], detail: dict[str, Any]):
        super().__init__(error)
        self.detail = detail


class ModelRefused(Failed):
    """The org's allow-list refuses the model (audited, ModelNotAllowedError) before any call."""

    outcome = "refused"


class ContextOverflow(ProviderFailed):
    """The provider refused the step's request as too large for the model's context
    (hangar.engine.providers.overflow): the step's message carries a ContextOverflowError. Never retried;
    the loop compacts instead (hangar.engine.run.compaction). Should it escape, it ends the turn like
    ProviderFailed."""


class CompactionFailed(ProviderFailed):
    """Compacting cannot make the history fit (the summary is too large, or the context overflows again
    right after a compaction): the turn ends with a ContextOverflowError the user sees, instead of
    compacting in a loop."""
