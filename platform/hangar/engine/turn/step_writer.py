"""The write side of a step, beside the store's `StepReader`: the assistant message a step opens, the model's
stream into its parts (retried while nothing was produced, seed 000 §12), its tool calls and their results,
and the closing write (patch, step-finish, the message completed with its cost, the session's usage and the
call's ledger row, in one statement). The deferred writes of a step (the last tool call's outcome, the
call's latency) wait here for that closing write."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from hangar.conversations import loop_selectors as reads
from hangar.conversations import services as store
from hangar.conversations.models import Message, Session
from hangar.conversations.services import now_ms
from hangar.engine.providers.base import ProviderError
from hangar.engine.providers.overflow import is_overflow_error
from hangar.engine.session.dbconn import release_connection
from hangar.engine.session.outcomes import Aborted, ContextOverflow, Finished, ProviderFailed, Stopped
from hangar.engine.turn.processor import StepResult, StreamProcessor
from hangar.engine.turn.retry import MAX_ATTEMPTS, retry_delay
from hangar.engine.turn.session_sandbox import SessionSandbox
from hangar.engine.turn.spend import prompt_tokens, reserve_call, step_call
from hangar.engine.turn.step_plan import StepPlan
from hangar.engine.turn.step_usage import estimate_unreported, record_failed_call, usage_after
from hangar.engine.turn.tool_calls import ToolCalls
from hangar.logging import get_logger
from hangar.usage.gate import BudgetState
from hangar.usage.ledger_services import budget_hold_release, ledger_writes

log = get_logger(__name__)
CONTINUES = ("tool-calls", "unknown")  # finish reasons after which the turn goes on
Parts = list[dict[str, Any]]
# A step this run has just streamed: (step-start hash, the tool parts just streamed, earlier tool parts).
Fresh = tuple[str | None, Parts, Parts]


class StepWriter:
    def __init__(
        self,
        session: Session,
        sandbox: SessionSandbox,
        abort: threading.Event,
        active_runs: Callable[[], int],
    ) -> None:
        self.session, self.sandbox, self.abort, self.active_runs = session, sandbox, abort, active_runs
        self._latency: dict[str, int] = {}  # ms of each step's model call, by message, until it closes
        # Calls whose tokens Hangar counted itself (the server reported none), until their ledger row is written.
        self._estimated: set[str] = set()
        # A model call's ceiling reserved against a hard budget (hangar.engine.turn.spend.reserve_call): `held`
        # until the call's closing write settles it; `hold_taken` until the run's end deletes the row.
        self.held = self.hold_taken = False

    def reserve(
        self,
        plan: StepPlan,
        hard: tuple[BudgetState, ...],
        max_output: int,
        system: list[str],
        messages: Parts,
        tools: Parts,
    ) -> None:
        """Reserve the coming call's ceiling against the hard budgets covering it (BudgetBlocked when one
        has no room); nothing to do, and no statement, when none does. Before the call's message: a
        refusal leaves none."""
        if not hard:
            return
        ref, prompt = plan.model_ref, prompt_tokens(system, messages, tools)
        if reserve_call(self.session, hard, ref["providerID"], ref["modelID"], prompt, max_output):
            self.held = self.hold_taken = True

    def release_hold(self) -> None:
        """At the run's end: the budget hold's row goes (it lapses with the lease anyway)."""
        try:
            budget_hold_release(self.session.pk)
        except Exception:  # the run's end must not fail for it
            log.warning("budget_hold_release_failed", session=self.session.pk, exc_info=True)
        self.held = self.hold_taken = False

    def open(self, user: Message, plan: StepPlan, parts: Parts, **data: Any) -> Message:
        """The step's assistant message answering `user`, with its first parts; `data` adds to (or, with
        `agent`, changes) what the plan says of it."""
        agent = data.pop("agent", None)
        return store.message_create(
            session=self.session, data={**plan.assistant_data(user, agent=agent), **data}, parts=parts
        )

    def stream(
        self, plan: StepPlan, message: Message, system: list[str], history: Parts, tools: Parts
    ) -> StepResult:
        """The model's answer as parts of `message`, retried with backoff while the provider's errors are
        retryable and nothing was produced yet. A context overflow is never retried: ContextOverflow."""
        attempt, began = 0, time.monotonic()
        while True:
            processor = StreamProcessor(self.session, message, plan.tools)
            release_connection(self.active_runs())
            try:
                events = plan.model.stream(
                    system=system,
                    messages=history,
                    tools=tools,
                    abort=self.abort,
                    temperature=plan.agent.temperature,
                )
                result = processor.consume(events)
                if self.abort.is_set():
                    raise Aborted()
                estimate_unreported(result, system, history, tools)
                if attempt:
                    store.session_status_set(session=self.session, status="busy")
                self._latency[message.pk] = int((time.monotonic() - began) * 1000)  # for its ledger row
                if result.usage.estimated:
                    self._estimated.add(message.pk)
                return result
            except ProviderError as exc:
                attempt += 1
                self._provider_failed(plan, message, exc, attempt, produced=processor.result.produced)

    def _provider_failed(
        self, plan: StepPlan, message: Message, exc: ProviderError, attempt: int, *, produced: bool
    ) -> None:
        """Returns when the call is to be tried again (after its delay), else raises the turn's outcome."""
        record_failed_call(self.session, plan.model_ref)
        if self.abort.is_set():
            raise Aborted() from exc
        if is_overflow_error(exc):  # the loop compacts instead
            overflow = {"name": exc.name, "data": {"message": exc.message}}
            self.fail(message, overflow)
            raise ContextOverflow(overflow) from exc
        error = {
            "name": "APIError",
            "data": {"message": exc.message, "statusCode": exc.status, "isRetryable": exc.retryable},
        }
        if not exc.retryable or attempt > MAX_ATTEMPTS or produced:
            self.fail(message, error)
            raise ProviderFailed(error) from exc
        delay = retry_delay(attempt, exc.headers)
        store.part_upsert(
            message=message,
            data={"type": "retry", "attempt": attempt, "error": error, "time": {"created": now_ms()}},
        )
        store.session_status_set(
            session=self.session,
            status="retry",
            detail={"attempt": attempt, "message": exc.message, "next": now_ms() + int(delay * 1000)},
        )
        if self.abort.wait(delay):
            raise Aborted() from exc

    def close(
        self,
        message: Message,
        plan: StepPlan,
        fresh: Fresh | None = None,
        *,
        model_call: bool = True,
        goes_on: Callable[[dict[str, Any]], bool] = lambda _data: False,
    ) -> None:
        """Run the step's tool calls, then close it: patch, step-finish, completed. `fresh` for a step this
        run has just streamed: what it wrote is known, so nothing is re-read; None = a resumed step.
        `model_call` False: a subtask's step, which no model made (no ledger row; its calls were asked for
        by the person). Raises the outcome when the turn ends with this step, unless `goes_on` says the loop
        carries on after it (a model's step whose usage filled the window: the next pass compacts)."""
        data = message.data if fresh else reads.message_data(message)
        if data.get("finish") is None and not data.get("error"):
            # The worker died mid-stream: what was said is kept, the step is closed as interrupted.
            finish = "tool-calls" if reads.has_tool_parts(message) else "unknown"
            data = message.data = {**data, "finish": finish}
        # The last call's outcome is written with the step's closing parts below (one statement fewer).
        calls = ToolCalls(
            plan.scope, message, *(fresh[1:] if fresh else ()), defer_last=True, by_user=not model_call
        )
        stopped = None
        try:
            calls.run_all()
        except Stopped as exc:
            stopped = exc
        if self.abort.is_set():
            calls.flush()
            raise Aborted()
        closing = self._closing_parts(message, data, fresh[0] if fresh else None, calls, resumed=not fresh)
        finish = "stop" if stopped and not stopped.keep_finish else data["finish"]
        self.settle(
            message, calls.take_unsaved() + closing, {**data, "finish": finish}, model_call=model_call
        )
        if stopped:
            raise stopped
        if finish not in CONTINUES:
            if model_call and not data.get("error") and goes_on(data):
                return
            raise Finished(finish)

    def _closing_parts(
        self, message: Message, data: dict[str, Any], start: str | None, calls: ToolCalls, *, resumed: bool
    ) -> Parts:
        """The step's patch (the files it changed, if any) and its step-finish."""
        if resumed:
            kinds = reads.step_start_and_tools(message)
            start = next((d.get("snapshot") for t, d in kinds if t == "step-start"), None)
            used = {d["tool"] for t, d in kinds if t == "tool"}
        else:
            used = {d["tool"] for d in calls.current.values()}
        end, changed = self.sandbox.step_end(start, used)
        files = [f"/workspace/{p.lstrip('/')}" for p in changed]
        closing: Parts = [{"type": "patch", "hash": start, "files": files}] if changed else []
        tokens = data.get("tokens") or {}
        snapshot = {"snapshot": end} if end else {}
        closing.append(
            {
                "type": "step-finish",
                "reason": data["finish"],
                "cost": data.get("cost", 0),
                "tokens": tokens,
                **snapshot,
            }
        )
        return closing

    def settle(
        self,
        message: Message,
        parts: Parts,
        data: dict[str, Any],
        kind: str = "step",
        *,
        model_call: bool = True,
    ) -> None:
        """A model call's closing write (a step's, a compaction's): its last parts, its message completed
        with its cost and tokens, the session's usage totals and the call's ledger row, in one statement."""
        latency, estimated = self._latency.pop(message.pk, None), message.pk in self._estimated
        self._estimated.discard(message.pk)
        call = step_call(self.session, data, latency, kind=kind, estimated=estimated)
        settles = model_call and self.held
        store.parts_upsert(
            message=message,
            parts=parts,
            usage=usage_after(self.session, data),
            message_data={**data, "time": {**data["time"], "completed": now_ms()}},
            ledger=ledger_writes(call, settle_hold=settles) if model_call else (),
        )
        if settles:
            self.held = False

    def fail(self, message: Message, error: dict[str, Any]) -> None:
        data = reads.message_data(message)
        store.message_update(
            message=message, data={**data, "error": error, "time": {**data["time"], "completed": now_ms()}}
        )
