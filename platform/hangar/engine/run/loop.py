"""The agent loop (seed 000 §3.2), run by one worker at a time per session (hangar.engine.run.leases).

    while True:
        re-read the session's messages                               (the store: StepReader)
        no user message                                              → NothingToAnswer
        a compaction asked for?                                      → summarise (compaction) and go on
        an unfinished step (a permission answered, a worker died)?   → close it (below)
        the last step ended with a reason ∉ {tool-calls, unknown}    → Finished
        the last step's usage fills the context window?              → prune; else ask for a compaction
        new assistant message, its step-start holding the tree's hash (the sandbox: SessionSandbox)
        system prompt + history since the latest summary → model stream → parts
                                        (processor; retries; a context overflow asks for a compaction)
                                                                     → Aborted, ProviderFailed
        close the step: run its tool calls (tool_calls), patch + step-finish, completed
                                                                     → PermissionAsked, Stopped, Aborted, Finished

Every way a turn ends is an exception named in hangar.engine.session.outcomes (PermissionAsked parks the run: the
worker is released, the session stays busy until the reply re-enqueues it); `run` maps them to what the
session shows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction

from hangar.conversations import services as store
from hangar.conversations.loop_selectors import StepState, session_for_run
from hangar.conversations.models import Message, Session
from hangar.conversations.revert_services import revert_cleanup
from hangar.engine.mcp.expand import expand_pending
from hangar.engine.providers.resolve import ModelResolver, model_for
from hangar.engine.run.abort import finish_aborted_turn
from hangar.engine.run.after_turn import after_turn
from hangar.engine.run.compaction import compacts_at_end
from hangar.engine.run.desk import Desk, open_desk
from hangar.engine.run.failures import sandbox_error, turn_failed
from hangar.engine.session.history import since_boundary, to_model_messages
from hangar.engine.session.outcomes import (
    Aborted,
    BudgetBlocked,
    ContextOverflow,
    Failed,
    Finished,
    MaxSteps,
    NothingToAnswer,
    SandboxFailed,
    TurnEnded,
)
from hangar.engine.session.subtasks import wake_parent
from hangar.engine.session.system import base_prompt, turn_reminders
from hangar.engine.tools.base import PermissionAsked
from hangar.engine.turn.spend import check_step
from hangar.engine.turn.step_plan import StepPlan
from hangar.engine.turn.step_usage import usage_data
from hangar.engine.turn.step_writer import CONTINUES
from hangar.engine.turn.subtask_step import run_subtask, subtask_of
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.logging import get_logger
from sandbox.protocol import Sandbox, SandboxError

log = get_logger(__name__)


class Loop:
    """One run of a session's turn: steps until an outcome ends it. `resolve_model` and `sandbox_for`
    are the seams a test swaps for a scripted model and a local sandbox."""

    def __init__(
        self,
        session_id: str,
        abort: threading.Event,
        active_runs: Callable[[], int] = lambda: 1,
        lost: threading.Event | None = None,
        *,
        resolve_model: ModelResolver = model_for,
        sandbox_for: Callable[[Session], Sandbox] = sandbox_for,
        policy_stamp: Callable[[], datetime | None] = lambda: None,
    ) -> None:
        self.session_id, self.abort, self.active_runs = session_id, abort, active_runs
        # Set (with abort) when the lease was taken away: another worker owns the session now, so this
        # run stops without writing anything (no abort bookkeeping, no status change).
        self.lost = lost or threading.Event()
        self._seams = (resolve_model, sandbox_for, policy_stamp)
        self.steps = 0

    def run(self) -> None:
        desk = open_desk(session_for_run(self.session_id), self.abort, self.active_runs, *self._seams)
        try:
            self.turn(desk)
        finally:
            if desk.writer.hold_taken and not self.lost.is_set():  # a lost run's session is another's now
                desk.writer.release_hold()

    def turn(self, desk: Desk) -> None:
        session = desk.session
        if session.abort_requested:  # before anything can end the run: the abort still needs finishing
            self.abort.set()
        if session.status != "busy":
            store.session_status_set(session=session, status="busy")
        if session.revert:  # a prompt raced the revert (its own cleanup missed it): the reverted turns go now
            revert_cleanup(session)
        ended: TurnEnded = NothingToAnswer()  # every way out of the steps below sets it
        try:
            while True:
                self.step(desk)
        except PermissionAsked:
            return  # parked: the reply re-enqueues the run
        except SandboxError as exc:  # the sandbox could not be attached where the step needed it
            log.warning("run_sandbox_failed", session=self.session_id, exc_info=True)
            ended = SandboxFailed(sandbox_error(exc))
        except TurnEnded as exc:  # Finished, Stopped, Aborted, MaxSteps, NothingToAnswer, Failed
            ended = exc
        if self.lost.is_set():
            log.warning("lease_lost_run_stopped", session=self.session_id)
            return
        self.end(desk, ended)

    def end(self, desk: Desk, ended: TurnEnded) -> None:
        """The session goes idle, saying how the turn ended; then what follows, off the critical path."""
        session, blocked = desk.session, None
        if isinstance(ended, Failed) and not self.abort.is_set():
            turn_failed(session, ended.error)  # the one way a failure is told (hangar.engine.run.failures)
            if isinstance(ended, BudgetBlocked):  # the session shows it stays blocked
                blocked = ended.detail
        aborted = self.abort.is_set()
        if aborted:
            finish_aborted_turn(session, self.abort)
        # A child's end and its parent's wake-up commit together; a session without a parent (most) pays
        # no BEGIN and COMMIT for it.
        with transaction.atomic() if session.parent_id else nullcontext():
            store.session_status_set(session=session, status="idle", detail=blocked)
            if session.parent_id:
                wake_parent(session)
        after_turn(desk, ended, aborted=aborted, blocked=blocked is not None, steps=self.steps)

    # --- one step ------------------------------------------------------------------------------------

    def step(self, desk: Desk) -> None:
        """One pass of the loop: returns if the turn goes on, raises the outcome that ends it."""
        if self.abort.is_set():
            raise Aborted()
        state = desk.reader.read()
        # A prompt's MCP prompt or resources, fetched here, in the worker (hangar.engine.mcp.expand).
        expand_pending(desk.session, state, desk.planner.mcp, desk.sandbox.workspace_mcp)
        users = [m for m in state.messages if m.role == "user"]
        if not users:
            raise NothingToAnswer()
        user, last = users[-1], state.messages[-1]
        plan = desk.planner.plan(user, state)
        if desk.window.pending(state, user):
            return desk.window.compact(state, user, plan)
        assistant = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        subtask = subtask_of(desk.reader, state, user)
        if assistant is not None and not assistant.data["time"].get("completed"):
            by_user = (
                subtask is not None and state.messages.index(assistant) == state.messages.index(user) + 1
            )
            return desk.writer.close(
                assistant, plan, model_call=not by_user, goes_on=desk.window.goes_on(plan.model_ref)
            )
        if subtask is not None and last is user:
            return run_subtask(desk.writer, desk.sandbox, plan, user, subtask)
        history = _once(lambda: desk.reader.history(state))
        if assistant is not None and last is assistant:
            if assistant.data.get("finish") not in (None, *CONTINUES):
                # A turn's last step that filled the window compacts too (OpenCode's processor does).
                if compacts_at_end(assistant) and desk.window.overflowing(state, history, user, plan):
                    return None
                raise Finished(assistant.data["finish"])
            if assistant.data.get("error"):
                raise Finished("error")
        if desk.window.overflowing(state, history, user, plan):
            return None  # a compaction was asked for: the next pass runs it
        self.steps += 1
        if plan.agent.steps and self.steps > plan.agent.steps:
            raise MaxSteps()
        return self.call_model(desk, plan, state, user, history())

    def call_model(self, desk: Desk, plan: StepPlan, state: StepState, user: Message, stored: Any) -> None:
        """The step's model call: its budget checked, its prompt built, its answer streamed, its tool calls
        run and the step closed."""
        last_step = bool(plan.agent.steps and self.steps == plan.agent.steps)
        hard = check_step(desk.session, plan.model_ref, state.messages, read=state.gate)
        start = desk.sandbox.step_start()
        since = since_boundary(stored)
        system = self.system_prompt(desk, plan, user, stored, since)
        limits = desk.window.limits(plan.model_ref)
        history = to_model_messages(since, desk.context.updates(), attachments=limits.attachments)
        history += turn_reminders(plan.agent.name, state.messages, last_step)
        tools = [] if last_step else plan.schemas
        desk.writer.reserve(plan, hard, limits.max_output, system, history, tools)
        message = desk.writer.open(
            user, plan, [{"type": "step-start", **({"snapshot": start} if start else {})}]
        )
        prior_tools = [p for _info, parts in stored for p in parts if p["type"] == "tool"]
        try:
            result = desk.writer.stream(plan, message, system, history, tools)
        except ContextOverflow as exc:
            return desk.window.overflowed(state, user, exc.args[0])
        # Kept on the instance; written to the row only if the step parks (else once, as it closes).
        message.data = {**message.data, **usage_data(plan.model_ref, result)}
        try:
            fresh = (start, result.tool_parts, prior_tools)
            desk.writer.close(message, plan, fresh, goes_on=desk.window.goes_on(plan.model_ref))
        except PermissionAsked:
            store.message_update(message=message, data=message.data)
            raise
        return None

    @staticmethod
    def system_prompt(desk: Desk, plan: StepPlan, user: Message, stored: Any, since: Any) -> list[str]:
        """The context epoch's baseline, then the prompt's own system text (after the cached baseline)."""
        agent, ref = plan.agent, plan.model_ref
        base = base_prompt(
            agent_prompt=agent.prompt, agent_prompt_text=agent.prompt_text, model_id=ref["modelID"]
        )
        system = desk.context.for_turn(
            stored, base=base, model_ref=ref, skills=plan.skills_block, since=since
        )
        return [*system, user.data["system"]] if user.data.get("system") else system


T = TypeVar("T")


def _once(read: Callable[[], T]) -> Callable[[], T]:
    """`read`, called at most once (a history read the step may not need)."""
    box: list[T] = []

    def get() -> T:
        if not box:
            box.append(read())
        return box[0]

    return get
