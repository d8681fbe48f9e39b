"""What a model call costs, as the loop records it: the step's finish/cost/tokens for its message, the
session's running token totals for the closing write, and the ledger row of an attempt that failed. Kept
out of the loop so that it reads as the seeds' pseudocode."""

from __future__ import annotations

import json
from typing import Any

from hangar.conversations.models import Session
from hangar.engine.providers.base import Usage, estimate_tokens
from hangar.engine.providers.cost import step_cost
from hangar.engine.turn.processor import StepResult
from hangar.engine.turn.spend import model_call
from hangar.usage.ledger_services import usage_record


def usage_data(model_ref: dict[str, str], result: StepResult) -> dict[str, Any]:
    """The step's finish reason, cost and tokens, in OpenCode's assistant-message shape."""
    u = result.usage
    return {
        "finish": result.finish,
        "cost": step_cost(model_ref["providerID"], model_ref["modelID"], u),
        "tokens": {
            "input": u.input,
            "output": u.output,
            "reasoning": u.reasoning,
            "cache": {"read": u.cache_read, "write": u.cache_write},
        },
    }


def estimate_unreported(
    result: StepResult, system: list[str], history: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> None:
    """A server that reports no usage (the bundled llama.cpp model, some local servers) still costs
    tokens: the call is counted as OpenCode counts without a tokenizer (hangar.engine.providers.base
    `estimate_tokens`), from what was sent and what came back, so the ledger, budgets and the session's
    totals are not zero. A reported figure is never replaced. The call's ledger row says it was
    estimated (`UsageRecord.tokens_estimated`), so usage never passes a guess off as a reported count."""
    u = result.usage
    if u.input or u.output or not result.produced:
        return
    sent = (
        "".join(system)
        + json.dumps(history, separators=(",", ":"))
        + json.dumps(tools, separators=(",", ":"))
    )
    result.usage = Usage(
        input=estimate_tokens(sent), output=max(1, round(result.output_chars / 4)), estimated=True
    )


def usage_after(session: Session, data: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(cost to add, the session's token totals with this step's), for the step's closing write. The
    session object keeps the totals: one runner per session, so no concurrent writer."""
    tokens = dict(session.tokens or {})
    for key in ("input", "output", "reasoning"):
        tokens[key] = tokens.get(key, 0) + (data.get("tokens") or {}).get(key, 0)
    session.tokens = tokens
    return data.get("cost") or 0, tokens


def record_failed_call(session: Session, model_ref: dict[str, str]) -> None:
    """A failed attempt is a call too: the ledger shows it (nothing was billed for it)."""
    usage_record(
        model_call(
            session,
            kind="step",
            provider=model_ref["providerID"],
            model=model_ref["modelID"],
            usage=Usage(),
            cost=0.0,
            latency_ms=None,
            outcome="error",
        )
    )
