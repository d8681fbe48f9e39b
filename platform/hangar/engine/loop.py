"""The agent loop (seed 000 §3.2), run by one worker at a time per session (hangar.engine.leases).

    while True:
        re-read the session and its messages
        an unfinished step (permission answered, or a worker died)? → finish its tool calls
        last assistant finished with a reason other than tool calls, after the last user message? → exit
        new assistant message; snapshot; system prompt; history → model stream → parts (processor)
        run the tool calls (toolrun); step-finish with tokens and cost; patch part if files changed

Control flow by exceptions: PermissionAsked parks the run (the worker is released; the session stays
`busy` with a pending PermissionRequest until the reply re-enqueues it), TurnStopped ends the turn,
the abort event (set by the lease keeper or the API) ends it with "Tool execution aborted".
"""

from __future__ import annotations

import threading

from django.db import transaction

from hangar.conversations import loop_selectors as reads
from hangar.conversations import services as store
from hangar.conversations.events import publish
from hangar.conversations.loop_selectors import StepState, message_parts, session_for_run, step_state
from hangar.conversations.loop_services import permission_requests_reject_pending, session_abort_clear
from hangar.conversations.models import Message
from hangar.conversations.services import now_ms
from hangar.engine import permissions as perm
from hangar.engine.agents import agent_get
from hangar.engine.dbconn import release_connection
from hangar.engine.history import to_model_messages
from hangar.engine.processor import StreamProcessor
from hangar.engine.providers.base import ProviderError
from hangar.engine.providers.cost import step_cost
from hangar.engine.providers.resolve import model_for
from hangar.engine.retry import MAX_ATTEMPTS, retry_delay
from hangar.engine.sandboxes import sandbox_for
from hangar.engine.system import INSTRUCTION_FILES, build_system, prompt_text
from hangar.engine.titles import title_maybe
from hangar.engine.toolrun import ToolRunner, TurnStopped
from hangar.engine.tools.base import PermissionAsked
from hangar.logging import get_logger
from sandbox.protocol import SandboxError

log = get_logger(__name__)
# Tools that never change the workspace: a step using only these needs no closing snapshot.
READ_ONLY_TOOLS = {"read", "glob", "grep", "list", "todoread", "todowrite", "invalid"}


class Run:
    """What one pass of the loop knows: the session, its agent, model, tools, rules and sandbox."""

    def __init__(
        self,
        session_id: str,
        abort: threading.Event,
        active_runs=lambda: 1,
        lost: threading.Event | None = None,
    ):
        self.session_id, self.abort, self.active_runs = session_id, abort, active_runs
        # Set (with abort) when the lease was taken away: another worker owns the session now, so this
        # run stops without writing anything (no abort bookkeeping, no status change).
        self.lost = lost or threading.Event()
        self._sandbox = None
        self._model_key = None
        self.model = None  # resolved in configure()
        self.org_policy: list[dict] | None = None
        self.steps = 0
        # The tree hash at the end of the previous step is the next step's start: nothing else runs in
        # between within one run, so one `snapshot_track` per step is enough.
        self.last_snapshot: str | None = None
        self.skills: str | None = None  # listed once per run
        # AGENTS.md / CLAUDE.md as last read; None = read them (first step, or a step may have changed them).
        self.instructions: list[str] | None = None
        # Parts of the messages that can no longer change while this run owns the session (user messages,
        # completed assistant steps), by message id: each step reads only the parts of the others.
        self._settled_parts: dict[str, list[dict]] = {}
        self._unsettled_parts: dict[str, list[dict]] = {}  # the others', as this step read them
        self.messages: list[Message] = []  # the session's messages as the last step read them

    def sandbox(self):
        if self._sandbox is None:
            self._sandbox = sandbox_for(self.session)
        return self._sandbox

    def configure(self, user: Message, state: StepState) -> None:
        from hangar.engine.tools.registry import get_tools

        # The run began with the whole row (run()); each step re-reads what may change meanwhile: the
        # session's and the project's permission rules (in the step's state read).
        self.session.permission, self.session.project.permission_rules = (
            state.session_rules,
            state.project_rules,
        )
        self.agent = agent_get(user.data.get("agent"))
        self.model_ref = user.data["model"]
        if self.org_policy is None:  # read once per run
            self.org_policy = perm.org_policy_for(self.session.org)
        self.ruleset = (
            perm.DEFAULTS
            + self.agent.permission
            + perm.from_config(self.session.project.permission_rules)
            + perm.from_config(self.session.permission)
        )
        tools = get_tools(self.agent.name, self.model_ref["modelID"])
        off = perm.disabled_tools(list(tools), self.ruleset, self.org_policy)
        self.tools = {name: tool for name, tool in tools.items() if name not in off}
        key = (self.model_ref["providerID"], self.model_ref["modelID"])
        if self._model_key != key:  # resolved once per run: the credential is decrypted here, not per step
            self.model = model_for(
                org_id=self.session.org_id,
                user_id=self.session.creator_id,
                provider_id=key[0],
                model_id=key[1],
            )
            self._model_key = key

    # --- the loop ------------------------------------------------------------------------------------

    def run(self) -> None:
        # Set before anything can end the run: an abort noticed here still needs the session to finish.
        session = self.session = session_for_run(self.session_id)
        if session.abort_requested:
            self.abort.set()
        if session.status != "busy":
            store.session_status_set(session=session, status="busy")
        try:
            while self._iterate():
                pass
        except PermissionAsked:
            return  # parked: the reply re-enqueues the run
        if self.lost.is_set():
            log.warning("lease_lost_run_stopped", session=self.session_id)
            return
        aborted = self.abort.is_set()
        if aborted:
            self._finish_aborted()
        store.session_status_set(session=self.session, status="idle")
        if not aborted:
            title_maybe(self)  # after idle, as OpenCode does it off the turn's critical path

    def _iterate(self) -> bool:
        if self.abort.is_set():
            return False
        state = step_state(self.session, settled=list(self._settled_parts))
        messages = self.messages = state.messages
        self._unsettled_parts = state.parts
        users = [m for m in messages if m.role == "user"]
        if not users:
            return False
        last_user, last = users[-1], messages[-1]
        try:
            self.configure(last_user, state)
        except ProviderError as exc:  # e.g. no credential for the provider: the user can act on this
            publish(
                self.session,
                "session.error",
                {"sessionID": self.session_id, "error": {"name": exc.name, "data": {"message": exc.message}}},
            )
            return False
        assistant = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if assistant is not None and not assistant.data["time"].get("completed"):
            return self._finish_step(assistant)
        if (
            assistant is not None
            and last is assistant
            and assistant.data.get("finish") not in (None, "tool-calls", "unknown")
        ):
            return False
        if assistant is not None and last is assistant and assistant.data.get("error"):
            return False
        self.steps += 1
        return self._step(last_user, messages)

    def _step(self, user: Message, messages: list[Message]) -> bool:
        model_ref, agent = self.model_ref, self.agent
        last_step = bool(agent.steps and self.steps >= agent.steps)
        if self.last_snapshot is None:
            # The run's first snapshot may first attach (or create) the sandbox: under a burst of sessions
            # that takes a while, and a pooled DB connection must not be held idle meanwhile.
            release_connection(self.active_runs())
        snapshot = self.last_snapshot or self._snapshot()
        message = store.message_create(
            session=self.session,
            data={
                "role": "assistant",
                "time": {"created": now_ms()},
                "parentID": user.pk,
                "modelID": model_ref["modelID"],
                "providerID": model_ref["providerID"],
                "mode": agent.name,
                "agent": agent.name,
                "path": {"cwd": "/workspace", "root": "/workspace"},
            },
            parts=[{"type": "step-start", **({"snapshot": snapshot} if snapshot else {})}],
        )
        system = build_system(
            agent_prompt=agent.prompt,
            provider_id=model_ref["providerID"],
            model_id=model_ref["modelID"],
            sandbox=self.sandbox(),
            user_system=user.data.get("system"),
            run=self,
        )
        stored = self._history(messages)
        history = to_model_messages(stored) + self._reminders(messages, last_step)
        prior_tools = [p for _info, parts in stored for p in parts if p["type"] == "tool"]
        from hangar.engine.tools.registry import tool_schemas

        tools = [] if last_step else tool_schemas(self.tools)
        result = self._stream(message, system, history, tools)
        if result is None:
            return False
        cost = step_cost(model_ref["providerID"], model_ref["modelID"], result.usage)
        u = result.usage
        tokens = {
            "input": u.input,
            "output": u.output,
            "reasoning": u.reasoning,
            "cache": {"read": u.cache_read, "write": u.cache_write},
        }
        # Kept on the instance; written to the row only if the step parks (else once, at completion).
        message.data = {**message.data, "finish": result.finish, "cost": cost, "tokens": tokens}
        try:
            return self._finish_step(message, fresh=(snapshot, result.tool_parts, prior_tools))
        except PermissionAsked:
            store.message_update(message=message, data=message.data)
            raise

    def _finish_step(self, message: Message, fresh: tuple | None = None) -> bool:
        """Run the step's tool calls, then close it: patch, step-finish, completed. False ends the turn.
        `fresh` = (step-start snapshot, the tool parts just streamed, earlier tool parts) for a step this
        run has just streamed: what it wrote is known, so nothing is re-read; None = a resumed step."""
        data = message.data if fresh else reads.message_data(message)
        if data.get("finish") is None and not data.get("error"):
            # The worker died mid-stream: what was said is kept, the step is closed as interrupted.
            data = {
                **data,
                "finish": "tool-calls" if reads.has_tool_parts(message) else "unknown",
            }
            message.data = data
        stopped = False
        # The last call's outcome is written with the step's closing parts below (one statement fewer).
        runner = ToolRunner(self, message, *(fresh[1:] if fresh else ()), defer_last=True)
        try:
            runner.run_all()
        except TurnStopped:
            stopped = True
        if self.abort.is_set():
            runner.flush()
            return False
        if fresh:
            snapshot, tools_used = fresh[0], {d["tool"] for d in runner.current.values()}
        else:
            kinds = reads.step_start_and_tools(message)
            snapshot = next((d.get("snapshot") for t, d in kinds if t == "step-start"), None)
            tools_used = {d["tool"] for t, d in kinds if t == "tool"}
        end, changed = self._closing_snapshot(snapshot, tools_used)
        closing = (
            [{"type": "patch", "hash": snapshot, "files": [f"/workspace/{p.lstrip('/')}" for p in changed]}]
            if changed
            else []
        )
        closing.append(
            {
                "type": "step-finish",
                "reason": data["finish"],
                "cost": data.get("cost", 0),
                "tokens": data.get("tokens") or {},
                **({"snapshot": end} if end else {}),
            }
        )
        finish = "stop" if stopped else data["finish"]
        # The step's closing parts, its completed message and the session's usage: one statement.
        store.parts_upsert(
            message=message,
            parts=runner.take_unsaved() + closing,
            usage=self._usage_after(data),
            message_data={**data, "finish": finish, "time": {**data["time"], "completed": now_ms()}},
        )
        return finish in ("tool-calls", "unknown")

    def _closing_snapshot(self, snapshot: str | None, tools_used: set[str]) -> tuple[str | None, list[str]]:
        """The tree at the end of the step and the workspace-relative paths changed since `snapshot`.
        Only tools that may write need a new snapshot."""
        if snapshot and not tools_used - READ_ONLY_TOOLS:
            self.last_snapshot = snapshot
            return snapshot, []
        try:
            end, changed = self.sandbox().snapshot_track_changed(snapshot)  # one round trip
        except SandboxError:
            log.warning("snapshot_failed", session=self.session_id, exc_info=True)
            end, changed = None, []
        self.last_snapshot = end
        if end is None or set(changed) & set(INSTRUCTION_FILES):
            self.instructions = None  # the next step reads AGENTS.md / CLAUDE.md again
        return end, changed

    def _stream(self, message: Message, system: list[str], history: list[dict], tools: list[dict]):
        attempt = 0
        while True:
            processor = StreamProcessor(self.session, message, self.tools)
            release_connection(self.active_runs())
            try:
                events = self.model.stream(
                    system=system,
                    messages=history,
                    tools=tools,
                    abort=self.abort,
                    temperature=self.agent.temperature,
                )
                result = processor.consume(events)
                if self.abort.is_set():
                    return None
                if attempt:
                    store.session_status_set(session=self.session, status="busy")
                return result
            except ProviderError as exc:
                if self.abort.is_set():
                    return None
                attempt += 1
                error = {
                    "name": "APIError",
                    "data": {"message": exc.message, "statusCode": exc.status, "isRetryable": exc.retryable},
                }
                if not exc.retryable or attempt > MAX_ATTEMPTS or processor.result.produced:
                    self._fail(message, error)
                    return None
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
                    return None

    # --- helpers -----------------------------------------------------------------------------------

    def _history(self, messages: list[Message]) -> list[tuple[dict, list[dict]]]:
        settled, parts = self._settled_parts, self._unsettled_parts  # the step's state read
        for m in messages:
            if m.pk in parts and (m.role == "user" or m.data["time"].get("completed")):
                settled[m.pk] = parts[m.pk]  # a user message is stored with its parts in one transaction
        return [(m.data, settled.get(m.pk) or parts.get(m.pk, [])) for m in messages]

    def parts_of(self, message: Message) -> list[dict]:
        """A message's parts as this run last read them (settled ones never change), else from the store."""
        parts = self._settled_parts.get(message.pk)
        return parts if parts is not None else message_parts(self.session_id, [message.pk])[message.pk]

    def _reminders(self, messages: list[Message], last_step: bool) -> list[dict]:
        out = []
        previous = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if self.agent.name == "plan":
            out.append(prompt_text("plan"))
        elif previous is not None and previous.data.get("agent") == "plan":
            out.append(prompt_text("build_switch"))
        if last_step:
            out.append(prompt_text("max_steps"))
        return [{"role": "user", "content": "\n".join(out)}] if out else []

    def _snapshot(self) -> str | None:
        try:
            return self.sandbox().snapshot_track()
        except SandboxError:
            log.warning("snapshot_failed", session=self.session_id, exc_info=True)
            return None

    def _usage_after(self, data: dict) -> tuple[float, dict]:
        """(cost to add, the session's token totals with this step's), for the step's closing write."""
        tokens = dict(self.session.tokens or {})  # one runner per session: no concurrent writer
        for key in ("input", "output", "reasoning"):
            tokens[key] = tokens.get(key, 0) + (data.get("tokens") or {}).get(key, 0)
        self.session.tokens = tokens
        return data.get("cost") or 0, tokens

    def _fail(self, message: Message, error: dict) -> None:
        data = reads.message_data(message)
        store.message_update(
            message=message, data={**data, "error": error, "time": {**data["time"], "completed": now_ms()}}
        )
        publish(self.session, "session.error", {"sessionID": self.session_id, "error": error})

    def _finish_aborted(self) -> None:
        """Unfinished tool parts → "Tool execution aborted"; pending asks rejected; the message ends
        with MessageAbortedError; the abort flag is cleared."""
        with transaction.atomic():  # all of it or none: a crash half-way must not leave half-rejected state
            self._finish_aborted_writes()

    def _finish_aborted_writes(self) -> None:
        permission_requests_reject_pending(session=self.session)
        for message in reads.open_assistant_messages(self.session):
            ToolRunner(self, message).run_all()  # with abort set, every unfinished part ends in error
            data = reads.message_data(message)
            store.message_update(
                message=message,
                data={
                    **data,
                    "error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}},
                    "time": {**data["time"], "completed": now_ms()},
                },
            )
        session_abort_clear(session_id=self.session_id)
