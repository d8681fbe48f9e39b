"""The loop's side of spend: the usage gate before each model call and the ledger row of each call.

`check_before_call` runs before every call a run makes (steps, compaction and the title): the allow-list
and the budgets covering the session (hangar.usage.gate, one indexed read). When a hard budget covers the
call, `reserve_call` then reserves the call's ceiling against it (its prompt as estimated and the model's
output limit, at the model's price: hangar.engine.providers.cost.call_ceiling) in one atomic statement,
so concurrent runs of an org cannot together pass a limit; the call's ledger write settles the hold to
the real cost, the run's end releases it, and a dead run's hold lapses with its lease. An org with no hard
budget pays nothing for this. `step_call` describes a step's call
for the ledger, which the step's closing write records (hangar.conversations.services.parts_upsert).
"""

from __future__ import annotations

import json
from typing import Any

from hangar.conversations.budget_services import (
    session_budget_alert,
    session_budget_blocked,
    session_budget_reserve,
    session_model_refused,
)
from hangar.conversations.models import Message, Session
from hangar.engine.providers.base import Usage
from hangar.engine.providers.cost import call_ceiling
from hangar.engine.session.outcomes import BudgetBlocked, ModelRefused
from hangar.usage.gate import BudgetState, GateRow, Verdict, usage_gate
from hangar.usage.ledger_services import ModelCall


def _gate(session: Session, provider: str, model: str, **reads: Any) -> Verdict:
    """The usage gate's verdict for a call of this session (the allow-list and the budgets covering it)."""
    return usage_gate(
        org_id=session.org_id,
        project_id=session.project_id,
        user_id=session.prompter_id,
        provider=provider,
        model=model,
        **reads,
    )


def _blocked(session: Session, state: BudgetState) -> BudgetBlocked:
    """The stop a run raises at a hard budget (audited, told as any budget stop)."""
    error = session_budget_blocked(session=session, state=state)
    return BudgetBlocked(error, {"blocked": "budget", "budget": state.view()})


def check_before_call(
    session: Session, provider: str, model: str, estimate: float = 0.0, read: GateRow | None = None
) -> tuple[BudgetState, ...]:
    """Raise ModelRefused or BudgetBlocked (audited; the loop tells them) unless the call may be made; tell each soft
    limit passed, once per period. `estimate`: what the call is expected to cost; `read`: the allow-list
    and budgets as the step's own read just took them (else read here). Returns the hard budgets covering
    the call, for `reserve_call`."""
    verdict = _gate(session, provider, model, estimate=estimate, read=read)
    if verdict.refused_model:
        raise ModelRefused(session_model_refused(session=session, model=verdict.refused_model))
    for state in verdict.alerts:
        session_budget_alert(session=session, state=state)
    if verdict.blocked is not None:
        raise _blocked(session, verdict.blocked)
    return verdict.hard


def prompt_tokens(system: list[str], messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """A request's prompt as OpenCode estimates without a tokenizer (four characters a token, as
    hangar.engine.providers.base.estimate_tokens counts)."""
    sent = sum(len(s) for s in system) + len(json.dumps(messages, separators=(",", ":")))
    return round((sent + len(json.dumps(tools, separators=(",", ":")))) / 4)


def ceiling_held(
    session: Session, hard: tuple[BudgetState, ...], provider: str, model: str, prompt: int, max_output: int
) -> BudgetState | None:
    """Reserve the call's ceiling against `hard` (check_before_call's answer). None: reserved, or nothing
    to reserve against; else the budget without room."""
    if not hard:
        return None
    amount = call_ceiling(provider, model, prompt, max_output)
    return session_budget_reserve(session=session, amount=amount, hard=hard)


def reserve_call(
    session: Session, hard: tuple[BudgetState, ...], provider: str, model: str, prompt: int, max_output: int
) -> bool:
    """Reserve the call's ceiling, or raise BudgetBlocked (audited, told as any budget stop). True when
    a hold was taken (the call's ledger write settles it)."""
    blocked = ceiling_held(session, hard, provider, model, prompt, max_output)
    if blocked is not None:
        raise _blocked(session, blocked)
    return bool(hard)


def quiet_check(
    session: Session, provider: str, model: str, *, prompt: int = 0, max_output: int = 0
) -> tuple[bool, bool]:
    """For a call the person did not ask for (the title): (whether it may be made, whether a hold was
    taken for it). A refusal is not told (the turn is over); soft limits passed are, once."""
    verdict = _gate(session, provider, model)
    for state in verdict.alerts:
        session_budget_alert(session=session, state=state)
    if verdict.refused_model or verdict.blocked is not None:
        return False, False
    if ceiling_held(session, verdict.hard, provider, model, prompt, max_output) is not None:
        return False, False
    return True, bool(verdict.hard)


def model_call(
    session: Session,
    *,
    kind: str,
    provider: str,
    model: str,
    usage: Usage,
    cost: float,
    latency_ms: int | None,
    outcome: str,
) -> ModelCall:
    return ModelCall(
        org_id=session.org_id,
        project_id=session.project_id,
        session_id=session.pk,
        user_id=session.prompter_id,
        kind=kind,
        source=session.source or "app",
        provider=provider,
        model=model,
        input_tokens=usage.input,
        output_tokens=usage.output,
        reasoning_tokens=usage.reasoning,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
        cost=cost,
        latency_ms=latency_ms,
        outcome=outcome,
        tokens_estimated=usage.estimated,
    )


def step_call(
    session: Session,
    data: dict[str, Any],
    latency_ms: int | None,
    kind: str = "step",
    *,
    estimated: bool = False,
) -> ModelCall:
    """A step's call (or a compaction's: `kind`) from its message data (cost and tokens as recorded);
    `estimated`: its tokens were counted by Hangar (hangar.engine.turn.step_usage.estimate_unreported)."""
    tokens = data.get("tokens") or {}
    cache = tokens.get("cache") or {}
    usage = Usage(
        input=tokens.get("input", 0),
        output=tokens.get("output", 0),
        reasoning=tokens.get("reasoning", 0),
        cache_read=cache.get("read", 0),
        cache_write=cache.get("write", 0),
        estimated=estimated,
    )
    finished = data.get("finish") not in (None, "unknown") or bool(tokens)
    return model_call(
        session,
        kind=kind,
        provider=data.get("providerID", ""),
        model=data.get("modelID", ""),
        usage=usage,
        cost=data.get("cost") or 0.0,
        latency_ms=latency_ms,
        outcome="ok" if finished else "interrupted",
    )


def check_step(
    session: Session, model_ref: dict[str, Any], messages: list[Message], *, read: GateRow | None = None
) -> tuple[BudgetState, ...]:
    """The gate before a step's model call, estimated at what the session's last call cost (kept across
    runs: its message; a failed turn's answer made no call, and costs 0). The hard budgets covering it."""
    called = next(
        (
            m
            for m in reversed(messages)
            if m.role == "assistant" and (not m.data.get("error") or m.data.get("cost"))
        ),
        None,
    )
    estimate = (called.data.get("cost") or 0.0) if called is not None else 0.0
    return check_before_call(
        session, model_ref["providerID"], model_ref["modelID"], estimate=estimate, read=read
    )
