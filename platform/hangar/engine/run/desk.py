"""What one run of the loop (hangar.engine.run.loop) works with, made when it starts: the session, the read and
write sides of its steps (StepReader, StepWriter), its sandbox and system context, its context window and
the planner of its steps. Each piece is handed only the others it needs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hangar.conversations.loop_selectors import StepReader
from hangar.conversations.models import Session
from hangar.engine.providers.resolve import ModelResolver
from hangar.engine.run.compaction import ContextWindow
from hangar.engine.session.subtasks import workspace_session
from hangar.engine.turn.session_sandbox import SessionSandbox
from hangar.engine.turn.step_plan import Planner
from hangar.engine.turn.step_writer import StepWriter
from hangar.engine.turn.system_context import SystemContext
from sandbox.protocol import Sandbox


@dataclass(frozen=True)
class Desk:
    """What one run works with, made when it starts: the session, the read and write sides of its steps,
    its sandbox and system context, its context window and its step planner."""

    session: Session
    reader: StepReader
    writer: StepWriter
    sandbox: SessionSandbox
    context: SystemContext
    window: ContextWindow
    planner: Planner
    started: float  # unix seconds (what the egress proxy refused since then is audited)


def open_desk(
    session: Session,
    abort: threading.Event,
    active_runs: Callable[[], int],
    resolve_model: ModelResolver,
    sandbox_for: Callable[[Session], Sandbox],
    policy_stamp: Callable[[], datetime | None],
) -> Desk:
    # A child session (a task's) works in its root session's workspace.
    owner = workspace_session(session) if session.parent_id else session
    sandbox = SessionSandbox(owner, sandbox_for, active_runs)
    reader, writer = StepReader(session), StepWriter(session, sandbox, abort, active_runs)
    context = SystemContext(session, sandbox)
    window = ContextWindow(session, reader, context, writer)
    planner = Planner(
        session,
        sandbox,
        abort=abort,
        active_runs=active_runs,
        resolve_model=resolve_model,
        policy_stamp=policy_stamp,
    )
    return Desk(session, reader, writer, sandbox, context, window, planner, time.time())
