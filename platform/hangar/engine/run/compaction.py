"""The context window (seed 000 §4, seed 003 "Context Window Management"): overflow detection, pruning of
old tool outputs, compaction by the hidden `compaction` agent, auto-continue.

At each step, before the model is called (the loop asks `ContextWindow`):
1. A compaction request is pending (the latest user message holds a `compaction` part, asked for by the
   loop or by a person through `summarize`): the compaction agent summarises the history with the seeds'
   template; the summary (an assistant message with `summary: true`) becomes the history's boundary
   (hangar.engine.session.history.since_boundary); an automatic one is followed by the synthetic "Continue..."
   user message, so the agent goes on by itself. `session.compacted` tells the clients.
2. The last finished step's reported usage (input + output + cache) reaches the usable window
   (`usable`): old tool outputs are pruned first; if that is not enough, a compaction is requested. This
   holds for a step that ended the turn too (OpenCode's processor checks every finished step): the
   compaction runs and its "Continue..." message lets the agent go on, as in OpenCode 1.18.33. (Before,
   a turn whose last step overflowed ended without compacting: a ~1,000-line tool output on a 4,000-token
   model compacted in OpenCode and not here, issue 30.)
3. A provider's own context-overflow error (hangar.engine.providers.overflow) requests a compaction too,
   never a retry.

It never loops: a compaction whose summary would not fit, a first step after a compaction whose prompt alone
overflows, or a provider overflow on the compaction call or right after one, ends the turn with a
ContextOverflowError the user sees (`CompactionFailed`).

The usable window, seed 003's formula (seed 000 agrees when the model states an input limit; seed 002 R010's
flat 90% is the older rule it replaced): input limit (stated, else context - max output) - reserved, where
reserved = min(COMPACTION_BUFFER, max output).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hangar.conversations import services as store
from hangar.conversations.events import publish
from hangar.conversations.loop_selectors import StepReader, StepState, message_parts
from hangar.conversations.models import Message, Session
from hangar.conversations.services import now_ms
from hangar.engine.providers.base import estimate_tokens
from hangar.engine.providers.catalogue import ModelLimits, limits_for
from hangar.engine.providers.overflow import NAME as OVERFLOW
from hangar.engine.session.history import boundary, since_boundary, to_model_messages
from hangar.engine.session.outcomes import CompactionFailed, ContextOverflow
from hangar.engine.session.system import prompt_text
from hangar.engine.turn.spend import check_before_call
from hangar.engine.turn.step_plan import StepPlan
from hangar.engine.turn.step_usage import usage_data
from hangar.engine.turn.step_writer import StepWriter
from hangar.engine.turn.system_context import SystemContext
from hangar.logging import get_logger

log = get_logger(__name__)

PRUNE_PROTECT = 40_000  # the newest tool outputs, in tokens, are never pruned
PRUNE_MINIMUM = 20_000  # pruning less than this is not worth losing the outputs (or the prompt cache)
COMPACTION_BUFFER = 20_000
PROTECTED_TOOLS = frozenset({"skill"})  # what a skill says stays in context

History = list[tuple[dict[str, Any], list[dict[str, Any]]]]


def usable(limits: ModelLimits) -> int:
    reserved = min(COMPACTION_BUFFER, limits.max_output)
    return (limits.input or limits.context - limits.max_output) - reserved


def context_tokens(tokens: dict[str, Any]) -> int:
    """What the step's request and answer occupied of the window, from its reported usage."""
    if tokens.get("total"):
        return int(tokens["total"])
    cache = tokens.get("cache") or {}
    return int(
        tokens.get("input", 0) + tokens.get("output", 0) + cache.get("read", 0) + cache.get("write", 0)
    )


def prompt_tokens(tokens: dict[str, Any]) -> int:
    cache = tokens.get("cache") or {}
    return int(tokens.get("input", 0) + cache.get("read", 0) + cache.get("write", 0))


def prunable(history: History) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], int]:
    """(message info, tool part) pairs to clear, newest first, and the tokens that frees (seed 000 §4.2
    stage 1, OpenCode's SessionCompaction.prune): walking back from the end, the last two turns are skipped,
    then completed tool outputs beyond the newest PRUNE_PROTECT tokens are chosen, stopping at a summary or
    at an output already cleared. Nothing is chosen unless it frees more than PRUNE_MINIMUM."""
    total = freed = turns = 0
    chosen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for info, parts in reversed(history):
        if info["role"] == "user":
            turns += 1
        if turns < 2:
            continue
        if info["role"] == "assistant" and info.get("summary"):
            break
        for part in reversed(parts):
            if part["type"] != "tool" or part["state"]["status"] != "completed":
                continue
            if part["tool"] in PROTECTED_TOOLS:
                continue
            if (part["state"].get("time") or {}).get("compacted"):
                return (chosen, freed) if freed > PRUNE_MINIMUM else ([], 0)
            size = estimate_tokens(part["state"]["output"])
            total += size
            if total > PRUNE_PROTECT:
                freed += size
                chosen.append((info, part))
    return (chosen, freed) if freed > PRUNE_MINIMUM else ([], 0)


def compacts_at_end(assistant: Message) -> bool:
    """A finished step that may ask for a compaction: a model's own answer, not a summary or an error.
    (A person's rejection ends the run where it happens, never through here.)"""
    return not assistant.data.get("summary") and not assistant.data.get("error")


def overflow_error(message: str) -> dict[str, Any]:
    return {"name": OVERFLOW, "data": {"message": message}}


def compaction_request(
    session: Any, *, agent: str, model: dict[str, Any], auto: bool, overflow: bool = False
) -> Message:
    """The user message that asks for a compaction (OpenCode's SessionCompaction.create): its `compaction`
    part marks where the summarised history will start."""
    part: dict[str, Any] = {"type": "compaction", "auto": auto, **({"overflow": True} if overflow else {})}
    return store.message_create(
        session=session,
        data={"role": "user", "time": {"created": now_ms()}, "agent": agent, "model": model},
        parts=[part],
    )


class ContextWindow:
    """What one run asks about its model's context window, step after step: it reads the session through
    the run's `reader`, and calls the model and writes through its `writer` (hangar.engine.turn.step_writer)."""

    def __init__(self, session: Session, reader: StepReader, context: SystemContext, writer: StepWriter):
        self.session, self.reader, self.context, self.writer = session, reader, context, writer
        self._limits: tuple[tuple[str, str], ModelLimits] | None = None

    def limits(self, model_ref: dict[str, Any]) -> ModelLimits:
        key = (model_ref["providerID"], model_ref["modelID"])
        if self._limits is None or self._limits[0] != key:
            self._limits = (key, limits_for(self.session.project.model_limits, *key))
        return self._limits[1]

    # --- 1. a pending compaction --------------------------------------------------------------------

    def pending(self, state: StepState, user: Message) -> bool:
        """The latest user message asks for a compaction no summary has answered yet (an interrupted summary,
        a worker died mid-compaction, does not count: it is done again)."""
        parts = self.reader.parts_of(user)
        if not any(p["type"] == "compaction" for p in parts):
            return False
        after = state.messages[state.messages.index(user) + 1 :]
        return not any(
            m.role == "assistant" and m.data.get("summary") and m.data["time"].get("completed") for m in after
        )

    def compact(self, state: StepState, user: Message, plan: StepPlan) -> None:
        """Run the compaction the latest user message asks for (module doc, 1)."""
        session, writer, model_ref = self.session, self.writer, plan.model_ref
        request = next(p for p in self.reader.parts_of(user) if p["type"] == "compaction")
        self._close_interrupted(state, user)
        hard = check_before_call(session, model_ref["providerID"], model_ref["modelID"])
        history = since_boundary(self.reader.history(state))
        messages = [
            *to_model_messages(
                history, self.context.updates(), attachments=self.limits(model_ref).attachments
            ),
            {"role": "user", "content": prompt_text("compaction_request")},
        ]
        system = [prompt_text("compaction")]
        writer.reserve(plan, hard, self.limits(model_ref).max_output, system, messages, [])
        message = writer.open(user, plan, [{"type": "step-start"}], agent="compaction", summary=True)
        try:
            result = writer.stream(plan, message, system, messages, [])
        except ContextOverflow as exc:
            raise CompactionFailed(
                overflow_error(
                    "The conversation is too large for the model to summarize it; start a new session "
                    f"or use a model with a larger context. The provider said: {exc.args[0]['data']['message']}"
                )
            ) from exc
        data = {**message.data, **usage_data(model_ref, result), "finish": "stop"}
        summary = self._summary_tokens(message, data)
        after = summary + estimate_tokens(prompt_text("compaction_continue"))
        limit = usable(self.limits(model_ref))
        failed = None
        if summary == 0:
            failed = overflow_error("The compaction produced no summary; the session was not compacted.")
        elif after >= limit:
            failed = overflow_error(
                f"Compaction did not shrink the context enough: about {after} tokens after compaction, "
                f"the model allows {limit} before it must compact. Start a new session or use a model with "
                "a larger context."
            )
        if failed:
            data["error"] = failed
        finish = {"type": "step-finish", "reason": "stop", "cost": data["cost"], "tokens": data["tokens"]}
        writer.settle(message, [finish], data, kind="compaction")
        if failed:
            raise CompactionFailed(failed)
        log.info("compacted", session=session.pk, summary_tokens=summary, auto=request["auto"])
        if request["auto"]:
            store.message_create(
                session=session,
                data={
                    "role": "user",
                    "time": {"created": now_ms()},
                    "agent": user.data["agent"],
                    "model": user.data["model"],
                },
                parts=[{"type": "text", "text": prompt_text("compaction_continue"), "synthetic": True}],
            )
        publish(session, "session.compacted", {"sessionID": session.pk})

    def _close_interrupted(self, state: StepState, user: Message) -> None:
        for m in state.messages[state.messages.index(user) + 1 :]:
            if m.role == "assistant" and m.data.get("summary") and not m.data["time"].get("completed"):
                data = {
                    **m.data,
                    "finish": "unknown",
                    "error": {"name": "MessageAbortedError", "data": {"message": "compaction interrupted"}},
                    "time": {**m.data["time"], "completed": now_ms()},
                }
                store.message_update(message=m, data=data)

    @staticmethod
    def _summary_tokens(message: Message, data: dict[str, Any]) -> int:
        """The summary's size: the reported output tokens, else estimated from its text (a server that
        reports no usage)."""
        reported = int((data.get("tokens") or {}).get("output") or 0)
        text = "".join(
            p.get("text", "")
            for p in message_parts(message.session_id, [message.pk])[message.pk]
            if p["type"] == "text"
        )
        if not text.strip():
            return 0
        return reported or estimate_tokens(text)

    # --- 2. overflow by the last step's usage ----------------------------------------------------------

    def fills(self, model_ref: dict[str, Any], tokens: dict[str, Any]) -> bool:
        """A step's reported usage reaches the usable window (no read: the step's own figures)."""
        return context_tokens(tokens) >= usable(self.limits(model_ref))

    def goes_on(self, model_ref: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
        """Whether the loop carries on after a step that finished the turn (hangar.engine.turn.step_writer): its
        usage filled the window, so the next pass compacts, as OpenCode does after any finished step."""
        return lambda data: self.fills(model_ref, data.get("tokens") or {})

    def overflowing(
        self, state: StepState, stored: Callable[[], History], user: Message, plan: StepPlan
    ) -> bool:
        """Prune, and ask for a compaction if pruning is not enough (module doc, 2). True when a compaction
        was asked for: the loop then re-reads the session and runs it. `stored` gives the history, read
        only when the last step's usage reaches the window."""
        infos = [m.data for m in state.messages]
        start = boundary(infos)
        finished = [
            i
            for i in infos[start:]
            if i["role"] == "assistant"
            and not i.get("summary")
            and i["time"].get("completed")
            and not i.get("error")
        ]
        if not finished:
            return False
        tokens, limit = finished[-1].get("tokens") or {}, usable(self.limits(plan.model_ref))
        count = context_tokens(tokens)
        if count < limit:
            return False
        freed = self.prune(since_boundary(stored()), state)
        if count - freed < limit:
            return False
        if start and len(finished) == 1 and prompt_tokens(tokens) >= limit:
            raise CompactionFailed(
                overflow_error(
                    f"The context is still too large after compaction: the first step's prompt took "
                    f"{prompt_tokens(tokens)} tokens, the model allows {limit}. Start a new session or use a "
                    "model with a larger context."
                )
            )
        log.info("context_overflow", session=self.session.pk, tokens=count, usable=limit, pruned=freed)
        compaction_request(self.session, agent=user.data["agent"], model=user.data["model"], auto=True)
        return True

    def prune(self, history: History, state: StepState) -> int:
        """Clear old tool outputs (`prunable`): each part records when (`state.time.compacted`) and is
        replayed as "[Old tool result content cleared]". The parts are changed in place: they are the
        run's own cached copies (StepReader), so the next replay sees them cleared without a re-read."""
        chosen, freed = prunable(history)
        if not chosen:
            return 0
        now, by_message = now_ms(), {m.pk: m for m in state.messages}
        touched: dict[str, list[dict[str, Any]]] = {}
        for info, part in chosen:
            part["state"]["time"] = {**part["state"]["time"], "compacted": now}
            touched.setdefault(info["id"], []).append(part)
        for message_id, parts in touched.items():
            store.parts_upsert(message=by_message[message_id], parts=parts)
        log.info("pruned", session=self.session.pk, parts=len(chosen), tokens=freed)
        return freed

    # --- 3. the provider said it overflowed --------------------------------------------------------------

    def overflowed(self, state: StepState, user: Message, error: dict[str, Any]) -> None:
        """A step's call failed with the provider's overflow error: compact, unless the history already
        starts at a compaction with no step finished since (compacting again would loop)."""
        infos = [m.data for m in state.messages]
        start = boundary(infos)
        done = any(
            i["role"] == "assistant"
            and not i.get("summary")
            and i["time"].get("completed")
            and not i.get("error")
            for i in infos[start:]
        )
        if start and not done:
            raise CompactionFailed(
                overflow_error(
                    "The context is still too large after compaction; the provider said: "
                    f"{error['data']['message']}"
                )
            )
        compaction_request(
            self.session, agent=user.data["agent"], model=user.data["model"], auto=True, overflow=True
        )
