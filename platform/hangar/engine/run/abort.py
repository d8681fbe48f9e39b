"""What an aborted turn leaves behind: unfinished tool parts end "Tool execution aborted", pending
permission requests and questions are rejected (audited), each open message ends with MessageAbortedError, the
abort flag is cleared, and the session's running children (its tasks) are asked to abort too. All of it or none: a crash half-way must not leave half-rejected state."""

from __future__ import annotations

import threading
from typing import Any

from django.db import transaction

from hangar.conversations import loop_selectors as reads
from hangar.conversations import services as store
from hangar.conversations.loop_services import permission_requests_reject_pending, session_abort_clear
from hangar.conversations.models import Session
from hangar.conversations.question_services import questions_reject_pending
from hangar.conversations.services import now_ms
from hangar.engine.session.subtasks import children_abort
from hangar.engine.turn.tool_calls import CallScope, ToolCalls
from sandbox.protocol import Sandbox, SandboxUnavailable


def _no_sandbox() -> Sandbox:
    raise SandboxUnavailable("an aborted turn runs no tool")


ABORTED = {"name": "MessageAbortedError", "data": {"message": "Aborted"}}


def finish_aborted_turn(session: Session, abort: threading.Event, error: dict[str, Any] = ABORTED) -> None:
    """`error` (OpenCode's shape) is what each open message ends with: aborted, unless the caller ended
    the turn for another reason (its sandbox host was lost: hangar.engine.run.host_loss)."""
    # With the abort set, the calls only record their end: no tool, rule or sandbox is needed.
    scope = CallScope(
        session=session,
        agent="",
        tools={},
        ruleset=[],
        org_policy=[],
        abort=abort,
        sandbox=_no_sandbox,
        active_runs=lambda: 1,
    )
    with transaction.atomic():
        permission_requests_reject_pending(session=session)
        questions_reject_pending(session=session)
        for message in reads.open_assistant_messages(session):
            ToolCalls(scope, message).run_all()
            data = reads.message_data(message)
            store.message_update(
                message=message,
                data={
                    **data,
                    "error": error,
                    "time": {**data["time"], "completed": now_ms()},
                },
            )
        session_abort_clear(session_id=session.pk)
        children_abort(session.pk)  # the turn's tasks stop with it
