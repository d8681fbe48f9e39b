"""Running the tool calls of one assistant step: tool parts pending → running → completed | error.

The loop hands the runner a `CallScope`: what the calls need from the run (the session, the step's tools
and rules, the sandbox, the abort event), nothing more.

The permission flow is resumable: `ctx.ask` (hangar.engine.turn.call_permissions) either allows, raises
`PermissionRejected`, or records a PermissionRequest and raises `PermissionAsked`; the running part is
marked `awaiting` that request and the loop releases the worker. When the reply re-enqueues the run, the
same call is executed again and `ask` finds the reply for (call id, permission). Doom loop: the third
identical call in a row asks `doom_loop` (seed 000 §6.5).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hangar.conversations import loop_selectors as reads
from hangar.conversations import services as store
from hangar.conversations.events import publish_ephemeral
from hangar.conversations.models import Message, Session
from hangar.conversations.services import now_ms
from hangar.engine.agents.builtin import Agent
from hangar.engine.agents.masking import Masker
from hangar.engine.agents.secret_env import masker_for
from hangar.engine.session import readmarks
from hangar.engine.session.dbconn import release_connection
from hangar.engine.session.outcomes import Stopped
from hangar.engine.tools.base import (
    EXTRA_AGENTS,
    EXTRA_AWAITING,
    EXTRA_BY_USER,
    EXTRA_FORMATTER,
    EXTRA_LSP,
    EXTRA_RUN_SUBCALL,
    EXTRA_SESSION,
    EXTRA_TOOLS,
    ChildRunning,
    Metadata,
    PermissionAsked,
    PermissionRejected,
    QuestionDismissed,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
)
from hangar.engine.turn.batch_calls import subcall_runner
from hangar.engine.turn.call_permissions import REJECTED, CallPermissions, PermissionDenied
from sandbox.protocol import Sandbox

ABORTED = "Tool execution aborted"
DOOM_LOOP_THRESHOLD = 3
METADATA_EVERY_S = 0.1


@dataclass(frozen=True)
class CallScope:
    """What running a step's tool calls needs from the run."""

    session: Session
    agent: str
    tools: dict[str, Tool]  # offered this step
    ruleset: list[
        dict[str, Any]
    ]  # defaults + agent + project + session rules (grants are read when they matter)
    org_policy: list[dict[str, Any]]
    abort: threading.Event
    sandbox: Callable[[], Sandbox]  # attached on first use
    active_runs: Callable[[], int]  # sessions this process runs (whether to give the DB connection back)
    # Before each call: (ruleset, org policy) in force if a policy changed mid-step, else None (live_policy).
    refresh_policy: Callable[[], tuple[list[dict[str, Any]], list[dict[str, Any]]] | None] = lambda: None
    custom_agents: dict[str, Agent] = field(default_factory=dict)  # the workspace's (the task tool's choice)
    workspace_lsp: Callable[[], Any] | None = None  # its opencode.json `lsp` key, read once per run
    workspace_formatter: Callable[[], Any] | None = None  # and its `formatter` key


class ToolCalls:
    def __init__(
        self,
        scope: CallScope,
        message: Message,
        parts: list[dict[str, Any]] | None = None,
        prior_tools: list[dict[str, Any]] | None = None,
        *,
        defer_last: bool = False,
        by_user: bool = False,
    ):
        """`parts`: the message's tool parts, pending and not yet stored, when the caller has just streamed
        them (the first save stores them all); `prior_tools`: the session's tool parts of earlier messages
        (from the step's history read). Either None → read from the database (a resumed step).
        `defer_last`: the last call's outcome is not written by the runner but left in `take_unsaved()`
        for the caller's next write (the loop's step closing: one statement fewer per tool step)."""
        self.scope = scope
        self.message = message
        self.permissions = CallPermissions(scope.session, message, scope.ruleset, scope.org_policy)
        self._parts = parts
        self._prior = prior_tools
        # This message's tool parts as last saved (by id): the in-memory view the doom-loop check and the
        # loop's closing snapshot decision use instead of re-reading the rows this runner just wrote.
        self.current: dict[str, dict[str, Any]] = {p["id"]: p for p in parts or []}
        self._unsaved: dict[str, dict[str, Any]] = dict(self.current)
        self._defer_last = defer_last
        self._by_user = by_user  # the calls of a subtask step: the person chose them, not the model
        self._deferred_id: str | None = None  # the last call's part (not a batch's sub-calls)
        self._masker: Masker | None = None

    # --- parts -------------------------------------------------------------------------------------

    def save(self, part: dict[str, Any], **state: Any) -> dict[str, Any]:
        """Store `part` with `state`, and with it (one statement) the streamed calls not stored yet. The
        last call's outcome (completed or error) waits for the caller's write when deferring."""
        part = {**part, "state": self.masker().data(state)}
        if part.get("id") == self._deferred_id and state["status"] in ("completed", "error"):
            self.current[part["id"]] = self._unsaved[part["id"]] = part
            return part
        self._unsaved.pop(part.get("id", ""), None)

        stored, _ = store.parts_upsert(message=self.message, parts=[part, *self._unsaved.values()])
        self._unsaved.clear()
        for saved in stored:
            self.current[saved["id"]] = saved
        return {**part, "id": stored[0]["id"]}

    def fail(self, part: dict[str, Any], args: dict[str, Any], start: int, error: str) -> dict[str, Any]:
        """Store `part` as ended in `error` (the model sees it)."""
        return self.save(
            part, status="error", input=args, error=error, time={"start": start, "end": now_ms()}
        )

    def masker(self) -> Masker:
        """The project's secrets, masked out of every part this runner stores or streams."""
        if self._masker is None:
            self._masker = masker_for(self.scope.session.project)
        return self._masker

    def take_unsaved(self) -> list[dict[str, Any]]:
        """The parts this runner has not written (a deferred outcome), for the caller to write; cleared."""
        parts, self._unsaved = list(self._unsaved.values()), {}
        return parts

    def flush(self) -> None:
        """Write what `take_unsaved` would hand over (when the caller will not write next)."""
        parts = self.take_unsaved()
        if parts:
            store.parts_upsert(message=self.message, parts=parts)

    def _recent_tools(self, exclude: str) -> list[dict[str, Any]]:
        """The session's latest tool parts other than `exclude`, newest first (as the query would give)."""
        if self._prior is None:
            return reads.recent_tool_parts(
                self.scope.session.pk, exclude=exclude, limit=DOOM_LOOP_THRESHOLD - 1
            )
        known = {p["id"]: p for p in self._prior}
        known.update(self.current)
        return [known[i] for i in sorted(known, reverse=True) if i != exclude][: DOOM_LOOP_THRESHOLD - 1]

    def _doom_loop(self, part: dict[str, Any]) -> bool:
        recent = self._recent_tools(part["id"])
        if len(recent) < DOOM_LOOP_THRESHOLD - 1:
            return False
        key = json.dumps(part["state"]["input"], sort_keys=True)
        return all(
            p["tool"] == part["tool"] and json.dumps(p["state"].get("input"), sort_keys=True) == key
            for p in recent
        )

    def context(self, call_id: str, part_ref: dict[str, Any], awaiting: str | None = None) -> ToolContext:
        session_id = self.scope.session.pk
        last = [0.0]

        def update_metadata(metadata: Metadata) -> None:

            if time.monotonic() - last[0] < METADATA_EVERY_S:
                return
            last[0] = time.monotonic()
            if callable(metadata):  # built only when it will be sent (bash output so far can be large)
                metadata = metadata()
            state = {**part_ref["state"], "metadata": self.masker().data(metadata)}
            publish_ephemeral(
                self.scope.session, "message.part.updated", {"part": {**part_ref, "state": state}}
            )

        return ToolContext(
            session_id=session_id,
            message_id=self.message.pk,
            call_id=call_id,
            agent=self.scope.agent,
            sandbox=self.scope.sandbox(),
            abort=self.scope.abort,
            ask=self.permissions.ask_for(call_id),
            update_metadata=update_metadata,
            was_read=lambda p: readmarks.was_read(session_id, p),
            mark_read=lambda p: readmarks.mark_read(session_id, p),
            extra={
                EXTRA_SESSION: self.scope.session,
                EXTRA_TOOLS: self.scope.tools,
                EXTRA_AGENTS: self.scope.custom_agents,
                **({EXTRA_LSP: self.scope.workspace_lsp} if self.scope.workspace_lsp else {}),
                **(
                    {EXTRA_FORMATTER: self.scope.workspace_formatter}
                    if self.scope.workspace_formatter
                    else {}
                ),
                EXTRA_RUN_SUBCALL: subcall_runner(self, call_id),
                **({EXTRA_AWAITING: awaiting} if awaiting else {}),
                **({EXTRA_BY_USER: True} if self._by_user else {}),
            },
        )

    # --- execution ---------------------------------------------------------------------------------

    def run_all(self) -> None:
        """Execute every unfinished tool part of the message, in order. Raises PermissionAsked (park),
        Stopped (a person rejected a call). A call that waits for a child session (ChildRunning) does not
        stop the others: every call of the step starts, then the step parks on the first child."""
        waiting: ChildRunning | None = None
        rows = self._parts if self._parts is not None else reads.tool_parts_of(self.message)
        if self._defer_last:
            self._deferred_id = next(
                (p["id"] for p in reversed(rows) if not (p.get("metadata") or {}).get("batchChild")), None
            )
        for part in rows:
            self.current.setdefault(part["id"], part)
            if "-" in part["callID"] and (part.get("metadata") or {}).get("batchChild"):
                continue  # batch sub-calls run inside their batch
            state = part["state"]
            if state["status"] in ("completed", "error"):
                continue
            if self.scope.abort.is_set():
                self.fail(part, state["input"], state.get("time", {}).get("start", now_ms()), ABORTED)
                continue
            if state["status"] == "running" and not (part.get("metadata") or {}).get("awaiting"):
                # Left running by a worker that died: the model sees it failed.
                self.fail(part, state["input"], state["time"]["start"], ABORTED)
                continue
            try:
                self.run_one(part)
            except ChildRunning as child:
                waiting = waiting or child
        if waiting is not None:
            self.flush()  # a later call's deferred outcome: the caller writes nothing before parking
            raise waiting

    def run_one(self, part: dict[str, Any]) -> dict[str, Any]:
        state, call_id = part["state"], part["callID"]
        fresh = self.scope.refresh_policy()
        if fresh is not None:
            self.permissions.policy_changed(*fresh)
        start = state.get("time", {}).get("start") or now_ms()
        marks = part.get("metadata") or {}
        awaiting, child = marks.get("awaiting"), bool(marks.get("child"))
        part = {k: v for k, v in part.items() if k != "metadata"}
        if child:  # waiting for a child session: it is running already and stays so until the child ends
            running = {**part, "state": state}
        else:
            running = self.save(part, status="running", input=state["input"], time={"start": start})
        try:
            if not awaiting and self._doom_loop(running):
                self.permissions.ask_for(call_id)(
                    "doom_loop",
                    [part["tool"]],
                    [part["tool"]],
                    {"tool": part["tool"], "input": state["input"]},
                )
            elif awaiting and not child:
                request = reads.permission_request_by_id(awaiting)
                if request is not None and request.permission == "doom_loop" and request.status == "reject":
                    raise PermissionRejected(REJECTED, feedback=request.reply_message)
            result = self.execute(part["tool"], state["input"], call_id, running, awaiting)
        except ChildRunning as waits:
            if not child:
                self.save(
                    {**part, "metadata": {"awaiting": waits.request_id, "child": True}},
                    status="running",
                    input=state["input"],
                    time={"start": start},
                    title=waits.title,
                    metadata=waits.metadata,
                )
            raise
        except PermissionAsked as asked:
            self.save(
                {**part, "metadata": {"awaiting": asked.request_id}},
                status="running",
                input=state["input"],
                time={"start": start},
            )
            raise
        except PermissionDenied as exc:
            return self.fail(part, state["input"], start, str(exc))
        except PermissionRejected as exc:
            return self.rejected(part, state["input"], start, exc)
        except ToolError as exc:
            error = ABORTED if self.scope.abort.is_set() else str(exc)
            return self.fail(part, state["input"], start, error)
        except Exception as exc:  # a tool bug must not kill the run: the model sees it (R008)
            error = ABORTED if self.scope.abort.is_set() else f"{type(exc).__name__}: {exc}"
            return self.fail(part, state["input"], start, error)
        if self.scope.abort.is_set():
            return self.fail(part, state["input"], start, ABORTED)
        return self.save(
            part,
            status="completed",
            input=state["input"],
            output=result.output,
            title=result.title,
            metadata=result.metadata,
            time={"start": start, "end": now_ms()},
            **({"attachments": result.attachments} if result.attachments else {}),
        )

    def rejected(
        self, part: dict[str, Any], args: dict[str, Any], start: int, exc: PermissionRejected
    ) -> dict[str, Any]:
        """A person said no: with feedback the model reads it and the turn goes on; without, the turn
        stops. A dismissed question fails with its own text and keeps the step's finish (OpenCode's)."""
        if isinstance(exc, QuestionDismissed):
            self.fail(part, args, start, str(exc))
            raise Stopped(keep_finish=True) from exc
        feedback = exc.feedback
        error = (
            f"{REJECTED} The user said: {feedback}"
            if feedback
            else f"{REJECTED} You may try again with different parameters."
        )
        self.fail(part, args, start, error)
        if not feedback:
            raise Stopped() from exc
        return part

    def execute(
        self,
        tool_name: str,
        args: dict[str, Any],
        call_id: str,
        part_ref: dict[str, Any],
        awaiting: str | None = None,
    ) -> ToolResult:
        from hangar.engine.tools.execute import execute_tool

        tool = self.scope.tools.get(tool_name)
        if tool is None:
            raise ToolError(f"Unknown tool {tool_name!r}.")
        ctx = self.context(call_id, part_ref, awaiting)
        release_connection(self.scope.active_runs())  # a command may run for minutes
        return execute_tool(tool, args, ctx)
