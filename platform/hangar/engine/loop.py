"""The agent loop (seed 000 §3.2), run by one worker at a time per session (hangar.engine.leases).

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

Every way a turn ends is an exception named in hangar.engine.outcomes (PermissionAsked parks the run: the
worker is released, the session stays busy until the reply re-enqueues it); `run` maps them to what the
session shows.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction

from hangar.conversations import loop_selectors as reads
from hangar.conversations import services as store
from hangar.conversations.loop_selectors import StepReader, StepState, session_for_run
from hangar.conversations.models import Message, Session
from hangar.conversations.revert_services import revert_cleanup
from hangar.conversations.services import now_ms
from hangar.engine import permissions as perm
from hangar.engine.abort import finish_aborted_turn
from hangar.engine.agents import AGENTS, Agent, agent_get
from hangar.engine.compaction import ContextWindow
from hangar.engine.custom_agents import UnknownAgent, project_agents, resolve_agent
from hangar.engine.dbconn import release_connection
from hangar.engine.diffs import summarize as summarize_diffs
from hangar.engine.failures import sandbox_error, turn_failed
from hangar.engine.history import since_boundary, to_model_messages
from hangar.engine.live_policy import LivePolicy
from hangar.engine.mcp.tools import McpCatalog
from hangar.engine.outcomes import (
    Aborted,
    BudgetBlocked,
    ContextOverflow,
    Failed,
    Finished,
    MaxSteps,
    ModelUnavailable,
    NothingToAnswer,
    ProviderFailed,
    SandboxFailed,
    Stopped,
    TurnEnded,
)
from hangar.engine.processor import StepResult, StreamProcessor
from hangar.engine.providers.base import Model, ProviderError
from hangar.engine.providers.overflow import is_overflow_error
from hangar.engine.providers.resolve import ModelResolver, model_for
from hangar.engine.retry import MAX_ATTEMPTS, retry_delay
from hangar.engine.sandboxes import egress_refused, sandbox_for
from hangar.engine.session_sandbox import SessionSandbox
from hangar.engine.skills import listing as skills_listing
from hangar.engine.spend import check_before_call, prompt_tokens, reserve_call, step_call
from hangar.engine.step_usage import estimate_unreported, record_failed_call, usage_after, usage_data
from hangar.engine.subtasks import wake_parent, workspace_session
from hangar.engine.system import base_prompt, turn_reminders
from hangar.engine.system_context import SystemContext
from hangar.engine.titles import title_maybe
from hangar.engine.tool_calls import CallScope, ToolCalls
from hangar.engine.tools.base import PermissionAsked, Tool
from hangar.engine.tools.registry import ALL, get_tools, tool_schemas_for
from hangar.logging import get_logger
from hangar.projects.models import NetworkPolicy
from hangar.usage.ledger_services import budget_hold_release, ledger_writes
from sandbox.protocol import Sandbox, SandboxError

log = get_logger(__name__)
CONTINUES = ("tool-calls", "unknown")  # finish reasons after which the turn goes on


T = TypeVar("T")


def _once(read: Callable[[], T]) -> Callable[[], T]:
    """`read`, called at most once (a history read the step may not need)."""
    box: list[T] = []

    def get() -> T:
        if not box:
            box.append(read())
        return box[0]

    return get


def _made_a_call(message: Message) -> bool:
    """Whether an assistant message stands for a model call (not a turn's error answer, which costs 0)."""
    return not message.data.get("error") or bool(message.data.get("cost"))


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
        self._resolve_model, self._sandbox_for = resolve_model, sandbox_for
        # The policy stamp as the lease keeper last read it: checked before each tool call (live_policy).
        self._policy_stamp = policy_stamp
        # Resolved once per run (the credential is decrypted then), by `configure` before the first stream.
        self.model: Model | None = None
        self._model_key: tuple[str, str] | None = None
        self.org_policy: list[dict[str, Any]] | None = None  # read once per run
        self.member_rules: list[dict[str, Any]] = []  # the run's person's own rules, read each step
        # The last step's offer (its tools and their schemas) and what decided it (see `_offer`).
        self._offered: tuple[tuple[Any, ...], dict[str, Tool], list[dict[str, Any]]] | None = None
        self.skills_block = ""  # the system prompt's <available_skills>, as the step's agent may load them
        self.schemas: list[dict[str, Any]] = []
        self.steps = 0
        self._latency: dict[str, int] = {}  # ms of each step's model call, by message, until it closes
        # Steps whose tokens Hangar counted itself (the server reported none), until their ledger row is written.
        self._estimated: set[str] = set()
        # A model call's ceiling reserved against a hard budget (hangar.engine.spend.reserve_call): `held`
        # until the call's closing write settles it; `hold_taken` until the run's end deletes the row.
        self.held = self.hold_taken = False

    def run(self) -> None:
        try:
            self._run()
        finally:
            if self.hold_taken and not self.lost.is_set():  # a lost run's session is another's now
                self.release_hold()

    def release_hold(self) -> None:
        try:
            budget_hold_release(self.session_id)
        except Exception:  # the hold lapses with the lease anyway; the run's end must not fail for it
            log.warning("budget_hold_release_failed", session=self.session_id, exc_info=True)
        self.held = self.hold_taken = False

    def reserve(
        self,
        hard: tuple[Any, ...],
        system: list[str],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> None:
        """Reserve the coming call's ceiling against the hard budgets covering it (BudgetBlocked when one
        has no room); nothing to do, and no statement, when none does."""
        if not hard:
            return
        ref = self.model_ref
        limits = self.window.limits()
        prompt = prompt_tokens(system, messages, tools)
        if reserve_call(self.session, hard, ref["providerID"], ref["modelID"], prompt, limits.max_output):
            self.held = self.hold_taken = True

    def _run(self) -> None:
        self.started = time.time()
        session = self.session = session_for_run(self.session_id)
        self.reader = StepReader(session)
        # A child session (a task's) works in its root session's workspace.
        owner = workspace_session(session) if session.parent_id else session
        self.sandbox = SessionSandbox(owner, self._sandbox_for, self.active_runs)
        self.live = LivePolicy(session, self.sandbox.attached)
        self.mcp = McpCatalog(self.sandbox.attach)  # the MCP servers' tools, listed at the run's first step
        self.window = ContextWindow(self)
        self.context = SystemContext(session, self.sandbox)
        if session.abort_requested:  # before anything can end the run: the abort still needs finishing
            self.abort.set()
        if session.status != "busy":
            store.session_status_set(session=session, status="busy")
        if session.revert:  # a prompt raced the revert (its own cleanup missed it): the reverted turns go now
            revert_cleanup(session)
        blocked = None
        ended: TurnEnded = NothingToAnswer()  # every way out of the steps below sets it
        try:
            while True:
                self.step()
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
        if isinstance(ended, Failed) and not self.abort.is_set():
            turn_failed(session, ended.error)  # the one way a failure is told (hangar.engine.failures)
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
        self.after_idle(ended, aborted=aborted, blocked=blocked is not None)

    def after_idle(self, ended: TurnEnded, *, aborted: bool, blocked: bool) -> None:
        """What follows a turn's end, off its critical path (as OpenCode does it): the diff summary, the
        title, and the audit rows for how the turn ended and what its sandbox was refused."""
        session, box = self.session, self.sandbox.attached()
        if self.sandbox.changed and box is not None:
            summarize_diffs(session, box)
        if not aborted and not blocked:
            title_maybe(session, self.model, self.reader, self.steps, self.window.limits().max_output)
        if not isinstance(ended, NothingToAnswer):  # a run that found no prompt was no turn
            outcome = "aborted" if aborted else ended.outcome
            store.session_turn_audit(session=session, outcome=outcome, steps=self.steps)
        if box is not None and session.project.network_policy == NetworkPolicy.ALLOWLIST:
            refused = egress_refused(box, self.started)  # what its proxy refused during this run
            if refused:
                store.egress_blocked_audit(session=session, targets=refused)

    # --- one step ------------------------------------------------------------------------------------

    @staticmethod
    def _compacts_at_end(assistant: Message) -> bool:
        """A finished step that may ask for a compaction: a model's own answer, not a summary or an error.
        (A person's rejection ends the run where it happens, never through here.)"""
        return not assistant.data.get("summary") and not assistant.data.get("error")

    def step(self) -> None:
        """One pass of the loop: returns if the turn goes on, raises the outcome that ends it."""
        if self.abort.is_set():
            raise Aborted()
        state = self.reader.read()
        users = [m for m in state.messages if m.role == "user"]
        if not users:
            raise NothingToAnswer()
        user, last = users[-1], state.messages[-1]
        self.configure(user, state)
        if self.window.pending(state, user):
            return self.window.compact(state, user)
        assistant = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        subtask = self.subtask_of(state, user)
        if assistant is not None and not assistant.data["time"].get("completed"):
            by_user = (
                subtask is not None and state.messages.index(assistant) == state.messages.index(user) + 1
            )
            return self.close_step(assistant, model_call=not by_user)  # resumed
        if subtask is not None and last is user:
            return self.run_subtask(user, subtask)
        read_history = _once(lambda: self.reader.history(state))
        if assistant is not None and last is assistant:
            if assistant.data.get("finish") not in (None, *CONTINUES):
                # A turn's last step that filled the window compacts too (OpenCode's processor does).
                if self._compacts_at_end(assistant) and self.window.overflowing(state, read_history, user):
                    return None
                raise Finished(assistant.data["finish"])
            if assistant.data.get("error"):
                raise Finished("error")
        stored = read_history()
        if self.window.overflowing(state, read_history, user):
            return None  # a compaction was asked for: the next pass runs it
        self.steps += 1
        if self.agent.steps and self.steps > self.agent.steps:
            raise MaxSteps()
        last_step = bool(self.agent.steps and self.steps == self.agent.steps)
        # The next call is estimated at what the session's last one cost (kept across runs: its message; a
        # failed turn's answer made no call).
        called = next(
            (m for m in reversed(state.messages) if m.role == "assistant" and _made_a_call(m)), None
        )
        estimate = (called.data.get("cost") or 0.0) if called is not None else 0.0
        hard = check_before_call(
            self.session,
            self.model_ref["providerID"],
            self.model_ref["modelID"],
            estimate=estimate,
            read=state.gate,
        )

        start = self.sandbox.step_start()
        since = since_boundary(stored)
        system = self.context.for_turn(
            stored,
            base=base_prompt(
                agent_prompt=self.agent.prompt,
                agent_prompt_text=self.agent.prompt_text,
                model_id=self.model_ref["modelID"],
            ),
            model_ref=self.model_ref,
            skills=self.skills_block,
            since=since,
        )
        if user.data.get("system"):  # the prompt's own system text: after the cached baseline
            system = [*system, user.data["system"]]
        attachments = self.window.limits().attachments
        history = to_model_messages(since, self.context.updates(), attachments=attachments) + turn_reminders(
            self.agent.name, state.messages, last_step
        )
        tools = [] if last_step else self.schemas
        self.reserve(hard, system, history, tools)  # before the step's message: a refusal leaves none
        message = store.message_create(
            session=self.session,
            data=self.assistant_data(user),
            parts=[{"type": "step-start", **({"snapshot": start} if start else {})}],
        )
        prior_tools = [p for _info, parts in stored for p in parts if p["type"] == "tool"]
        began = time.monotonic()
        try:
            result = self.stream(message, system, history, tools)
        except ContextOverflow as exc:
            return self.window.overflowed(state, user, exc.args[0])
        self.note_latency(message, began, estimated=result.usage.estimated)
        # Kept on the instance; written to the row only if the step parks (else once, as it closes).
        message.data = {**message.data, **usage_data(self.model_ref, result)}
        try:
            self.close_step(message, fresh=(start, result.tool_parts, prior_tools))
        except PermissionAsked:
            store.message_update(message=message, data=message.data)
            raise

    def subtask_of(self, state: StepState, user: Message) -> dict[str, Any] | None:
        """The latest prompt's subtask part (a person asked for a subagent by name), if it has one."""
        if not any(m.role == "user" and m.pk == user.pk for m in state.messages[-2:]):
            return None  # only the prompt or the step answering it can be the subtask's
        return next((p for p in self.reader.parts_of(user) if p["type"] == "subtask"), None)

    def run_subtask(self, user: Message, subtask: dict[str, Any]) -> None:
        """OpenCode's pending subtask: a step that makes no model call, its one tool call the `task` the
        person asked for (their choice of agent: no `task` permission asked), closed like any step."""
        start = self.sandbox.step_start()
        model = subtask.get("model") or self.model_ref
        data = {
            **self.assistant_data(user, agent=subtask["agent"]),
            "modelID": model["modelID"],
            "providerID": model["providerID"],
            "finish": "tool-calls",
        }
        arguments = {k: subtask[k] for k in ("prompt", "description", "command") if subtask.get(k)}
        arguments["subagent_type"] = subtask["agent"]
        call: dict[str, Any] = {
            "type": "tool",
            "callID": f"subtask_{user.pk}",
            "tool": "task",
            "state": {"status": "pending", "input": arguments, "raw": json.dumps(arguments)},
        }
        parts: list[dict[str, Any]] = [{"type": "step-start", **({"snapshot": start} if start else {})}, call]
        message = store.message_create(session=self.session, data=data, parts=parts)
        self.close_step(message, model_call=False)

    def close_step(
        self,
        message: Message,
        fresh: tuple[str | None, list[dict[str, Any]], list[dict[str, Any]]] | None = None,
        *,
        model_call: bool = True,
    ) -> None:
        """Run the step's tool calls, then close it: patch, step-finish, completed. `fresh` = (step-start
        hash, the tool parts just streamed, earlier tool parts) for a step this run has just streamed: what
        it wrote is known, so nothing is re-read; None = a resumed step. `model_call` False: a subtask's
        step, which no model made (no ledger row; its calls were asked for by the person)."""
        data = message.data if fresh else reads.message_data(message)
        if data.get("finish") is None and not data.get("error"):
            # The worker died mid-stream: what was said is kept, the step is closed as interrupted.
            data = message.data = {
                **data,
                "finish": "tool-calls" if reads.has_tool_parts(message) else "unknown",
            }
        # The last call's outcome is written with the step's closing parts below (one statement fewer).
        calls = ToolCalls(
            self.scope, message, *(fresh[1:] if fresh else ()), defer_last=True, by_user=not model_call
        )
        stopped = None
        try:
            calls.run_all()
        except Stopped as exc:
            stopped = exc
        if self.abort.is_set():
            calls.flush()
            raise Aborted()
        if fresh:
            start, used = fresh[0], {d["tool"] for d in calls.current.values()}
        else:
            kinds = reads.step_start_and_tools(message)
            start = next((d.get("snapshot") for t, d in kinds if t == "step-start"), None)
            used = {d["tool"] for t, d in kinds if t == "tool"}
        end, changed = self.sandbox.step_end(start, used)
        files = [f"/workspace/{p.lstrip('/')}" for p in changed]
        closing: list[dict[str, Any]] = [{"type": "patch", "hash": start, "files": files}] if changed else []

        closing.append(
            {
                "type": "step-finish",
                "reason": data["finish"],
                "cost": data.get("cost", 0),
                "tokens": data.get("tokens") or {},
                **({"snapshot": end} if end else {}),
            }
        )
        finish = "stop" if stopped and not stopped.keep_finish else data["finish"]
        self.settle(
            message, calls.take_unsaved() + closing, {**data, "finish": finish}, model_call=model_call
        )
        if stopped:
            raise stopped
        if finish not in CONTINUES:
            if model_call and not data.get("error") and self.window.fills(data.get("tokens") or {}):
                return  # the next pass compacts, as OpenCode does after any finished step (ContextWindow)
            raise Finished(finish)

    def note_latency(self, message: Message, began: float, *, estimated: bool = False) -> None:
        """The model call's time, and whether its tokens were Hangar's count (the server reported none),
        for its ledger row (written as the call's message is settled)."""
        self._latency[message.pk] = int((time.monotonic() - began) * 1000)
        if estimated:
            self._estimated.add(message.pk)

    def settle(
        self,
        message: Message,
        parts: list[dict[str, Any]],
        data: dict[str, Any],
        kind: str = "step",
        *,
        model_call: bool = True,
    ) -> None:
        """A model call's closing write (a step's, a compaction's): its last parts, its message completed
        with its cost and tokens, the session's usage totals and the call's ledger row, in one statement."""
        call = step_call(
            self.session,
            data,
            self._latency.pop(message.pk, None),
            kind=kind,
            estimated=message.pk in self._estimated,
        )
        self._estimated.discard(message.pk)
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

    def stream(
        self, message: Message, system: list[str], history: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> StepResult:
        """The model's answer as parts of `message`, retried with backoff while the provider's errors are
        retryable and nothing was produced yet (seed 000 §12)."""
        model = self.model
        assert model is not None, "configure() resolves the model before a step streams"
        attempt = 0
        while True:
            processor = StreamProcessor(self.session, message, self.tools)
            release_connection(self.active_runs())
            try:
                events = model.stream(
                    system=system,
                    messages=history,
                    tools=tools,
                    abort=self.abort,
                    temperature=self.agent.temperature,
                )
                result = processor.consume(events)
                if self.abort.is_set():
                    raise Aborted()
                estimate_unreported(result, system, history, tools)
                if attempt:
                    store.session_status_set(session=self.session, status="busy")
                return result
            except ProviderError as exc:
                record_failed_call(self.session, self.model_ref)
                if self.abort.is_set():
                    raise Aborted() from exc
                if is_overflow_error(exc):  # never retried: the loop compacts instead
                    overflow = {"name": exc.name, "data": {"message": exc.message}}
                    self._fail(message, overflow)
                    raise ContextOverflow(overflow) from exc
                attempt += 1
                error = {
                    "name": "APIError",
                    "data": {"message": exc.message, "statusCode": exc.status, "isRetryable": exc.retryable},
                }
                if not exc.retryable or attempt > MAX_ATTEMPTS or processor.result.produced:
                    self._fail(message, error)
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

    # --- what a step knows -------------------------------------------------------------------------

    def configure(self, user: Message, state: StepState) -> None:
        """The step's agent, model, rules and tools, from its user message and the rules just re-read."""
        session = self.session
        if self.live.observe(state.policy_stamp):  # a policy changed: re-read above, read the org's again
            self.org_policy = None
        session.permission, session.project.permission_rules = state.session_rules, state.project_rules
        self.member_rules = state.member_rules or []
        self.model_ref = user.data["model"]
        self._resolve(session)  # first: a model that cannot be used fails before the sandbox is touched
        self.agent = self._agent(user.data.get("agent"))
        if self.org_policy is None:
            self.org_policy = perm.org_policy_for(session.org)
        ruleset = self._ruleset()
        tools = get_tools(self.agent.name, self.model_ref["modelID"])
        if tools:  # an agent offered no tools (the hidden ones) gets no MCP tools either
            tools.update(self.mcp.tools(session, set(ALL), self.sandbox.workspace_mcp))
        skills = (
            [s for s in self.sandbox.skills() if self._may("skill", s.name, ruleset)]
            if "skill" in tools
            else []
        )
        self.skills_block = skills_listing(skills)
        if not skills:  # nothing to load: the tool is not offered (OpenCode's)
            tools.pop("skill", None)
        self.tools, self.schemas = self._offer(tools, ruleset)
        self.scope = CallScope(
            session=session,
            agent=self.agent.name,
            tools=self.tools,
            ruleset=ruleset,
            org_policy=self.org_policy,
            abort=self.abort,
            sandbox=self.sandbox.attach,
            active_runs=self.active_runs,
            refresh_policy=self._refresh_policy,
            custom_agents=self._custom_agents() if "task" in self.tools else {},
        )

    def _resolve(self, session: Session) -> None:
        """The step's model, resolved (its credential decrypted) when it differs from the last step's."""
        key = (self.model_ref["providerID"], self.model_ref["modelID"])
        if self._model_key == key:
            return
        try:
            self.model = self._resolve_model(
                org_id=session.org_id, user_id=session.prompter_id, provider_id=key[0], model_id=key[1]
            )
        except ProviderError as exc:  # e.g. no credential for the provider: the user can act on this
            data = {
                "message": exc.message,
                **({"providerID": key[0]} if exc.name == "ProviderAuthError" else {}),
            }
            raise ModelUnavailable({"name": exc.name, "data": data}) from exc
        self._model_key = key

    def _may(self, permission: str, pattern: str, ruleset: list[dict[str, Any]]) -> bool:
        return (
            perm.decide(permission, [pattern], ruleset=ruleset, org_policy=self.org_policy or []) != perm.DENY
        )

    def _custom_agents(self) -> dict[str, Agent]:
        """The task tool's choice beyond the built-in agents: the workspace's, the project's winning."""
        return {**self.sandbox.custom_agents()[0], **project_agents(self.session.project.agents)}

    def _agent(self, name: str | None) -> Agent:
        """A built-in agent, else the workspace's (read only for a name that is not built in)."""
        if not name or name in AGENTS:
            return agent_get(name)
        configured = project_agents(self.session.project.agents)
        if name in configured:
            return configured[name]
        try:
            return resolve_agent(name, self.sandbox.custom_agents(), configured)
        except UnknownAgent as exc:  # e.g. its file was deleted or broken since the prompt
            raise ModelUnavailable({"name": "UnknownAgent", "data": {"message": str(exc)}}) from exc

    def _offer(
        self, tools: dict[str, Tool], ruleset: list[dict[str, Any]]
    ) -> tuple[dict[str, Tool], list[dict[str, Any]]]:
        """The tools the step offers (those the rules deny for every pattern are left out) and their
        schemas (the task tool lists only the subagents the rules let it start). Worked out again only when
        the tools or rules differ from the last step's: they rarely do, and comparing is a fraction of
        matching every rule against every tool."""
        policy = self.org_policy or []
        custom = self._custom_agents() if "task" in tools else {}
        key = (list(tools), ruleset, policy, list(custom.values()))
        if self._offered is None or self._offered[0] != key:
            off = perm.disabled_tools(key[0], ruleset, policy)
            kept = {name: tool for name, tool in tools.items() if name not in off}
            self._offered = (key, kept, tool_schemas_for(kept, ruleset, policy, custom.values()))
        return self._offered[1], self._offered[2]

    def _ruleset(self) -> list[dict[str, Any]]:
        return perm.session_ruleset(
            self.agent.permission,
            self.session.project.permission_rules,
            self.session.permission,
            org_rules=self.org_policy,
            member_rules=self.member_rules,
        )

    def _refresh_policy(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """Before a tool call: (ruleset, org policy) in force if a policy changed since the step began
        (the live sandbox is brought up to date meanwhile), else None. No statement unless it changed."""
        if not self.live.observe(self._policy_stamp()):
            return None
        self.org_policy = perm.org_policy_for(self.session.org)
        return self._ruleset(), self.org_policy

    def _fail(self, message: Message, error: dict[str, Any]) -> None:
        data = reads.message_data(message)
        store.message_update(
            message=message, data={**data, "error": error, "time": {**data["time"], "completed": now_ms()}}
        )

    def assistant_data(self, user: Message, agent: str | None = None) -> dict[str, Any]:
        """A new assistant message answering `user`, by the step's agent (or `agent`: the compaction's)."""
        return {
            "role": "assistant",
            "time": {"created": now_ms()},
            "parentID": user.pk,
            "modelID": self.model_ref["modelID"],
            "providerID": self.model_ref["providerID"],
            "mode": agent or self.agent.name,
            "agent": agent or self.agent.name,
            "path": {"cwd": "/workspace", "root": "/workspace"},
        }
