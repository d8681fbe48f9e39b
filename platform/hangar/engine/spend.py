"""The loop's side of spend: the usage gate before each model call and the ledger row of each call.

`check_before_call` runs before every call a run makes (steps and the title): the allow-list and the
budgets covering the session (hangar.usage.gate, one indexed read). `step_call` describes a step's call
for the ledger, which the step's closing write records (hangar.conversations.services.parts_upsert).
"""

from __future__ import annotations

from typing import Any

from hangar.conversations.budget_services import (
    session_budget_alert,
    session_budget_blocked,
    session_model_refused,
)
from hangar.conversations.models import Session
from hangar.engine.outcomes import BudgetBlocked, ModelRefused
from hangar.engine.providers.base import Usage
from hangar.usage.gate import GateRow, usage_gate
from hangar.usage.ledger_services import ModelCall


def check_before_call(
    session: Session, provider: str, model: str, estimate: float = 0.0, read: GateRow | None = None
) -> None:
    """Raise ModelRefused or BudgetBlocked (audited; the loop tells them) unless the call may be made; tell each soft
    limit passed, once per period. `estimate`: what the call is expected to cost; `read`: the allow-list
    and budgets as the step's own read just took them (else read here)."""
    verdict = usage_gate(
        org_id=session.org_id,
        project_id=session.project_id,
        user_id=session.prompter_id,
        provider=provider,
        model=model,
        estimate=estimate,
        read=read,
    )
    if verdict.refused_model:
        raise ModelRefused(session_model_refused(session=session, model=verdict.refused_model))
    for state in verdict.alerts:
        session_budget_alert(session=session, state=state)
    if verdict.blocked is not None:
        error = session_budget_blocked(session=session, state=verdict.blocked)
        raise BudgetBlocked(error, {"blocked": "budget", "budget": verdict.blocked.view()})


def quiet_check(session: Session, provider: str, model: str, estimate: float = 0.0) -> bool:
    """For a call the person did not ask for (the title): whether it may be made. A refusal is not told
    (the turn is over); soft limits passed are, once."""
    verdict = usage_gate(
        org_id=session.org_id,
        project_id=session.project_id,
        user_id=session.prompter_id,
        provider=provider,
        model=model,
        estimate=estimate,
    )
    for state in verdict.alerts:
        session_budget_alert(session=session, state=state)
    return not verdict.refused_model and verdict.blocked is None


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
    `estimated`: its tokens were counted by Hangar (hangar.engine.step_usage.estimate_unreported)."""
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
