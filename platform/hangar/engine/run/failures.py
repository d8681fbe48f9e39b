"""The one way a failed turn is told, whatever failed and wherever: an outcome the loop raised
(hangar.engine.session.outcomes.Failed and its kinds: the model unavailable, a budget or the allow-list, the
sandbox, the system context, a provider's error) or a crash the worker caught. The latest prompt is
answered by an assistant message carrying the error in OpenCode's shape (unless the failed step's own
message carries it), `session.error` is published, and the caller then sets the session idle: a reload
shows the error, and a client waiting for the turn's answer gets it (OpenCode's `opencode run` prints it).

A new cause needs nothing here: raise `Failed({"name": ..., "data": {"message": ...}})` from the step.
"""

from __future__ import annotations

from typing import Any

from hangar.conversations.failure_services import turn_failed_record
from hangar.conversations.models import Session
from sandbox.protocol import SandboxError

# What a person is told when the sandbox fails where the turn cannot go on without it.
SANDBOX_FAILED = "The session's sandbox could not be started: {reason}"


def turn_failed(session: Session, error: dict[str, Any]) -> None:
    turn_failed_record(session=session, error=error)


def sandbox_error(exc: SandboxError) -> dict[str, Any]:
    """A sandbox failure as the error a person sees (a workspace's own message is already worded)."""
    from hangar.engine.workspace.prepare import WorkspaceError

    if isinstance(exc, WorkspaceError):
        return {"name": "WorkspaceError", "data": {"message": str(exc)}}
    return {"name": "SandboxError", "data": {"message": SANDBOX_FAILED.format(reason=str(exc)[:500])}}


def crash_error(exc: BaseException) -> dict[str, Any]:
    return {"name": "UnknownError", "data": {"message": str(exc)[:500] or type(exc).__name__}}
