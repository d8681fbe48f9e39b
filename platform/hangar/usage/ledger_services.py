"""Recording a model call: the one function every caller uses (a step, the title agent, compaction).

A call is two writes: its ledger row and its day's rollup rows (an upsert adding to the running sums). Both
are returned as `(sql, params)` statements ending in `RETURNING 1`, so a caller that already writes the
call's cost in one statement (the step's closing write, hangar.conversations.services.parts_upsert) adds
them to that statement as CTEs: the session's cost, the ledger and the rollup commit or fail together.
A caller with nothing else to write runs `usage_record`.

A call that reserved its ceiling against the hard budgets (a `BudgetHold`, taken by
hangar.conversations.budget_services.session_budget_reserve) is settled by the same statement: its hold goes
to 0 as its real cost reaches the rollup, so no reader ever sees the call counted twice or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from hangar.rawsql import run

_LEDGER_INSERT = (
    "INSERT INTO usage_usagerecord (org_id, project_id, session_id, user_id, kind, source, provider, model,"
    " input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost,"
    " latency_ms, outcome, tokens_estimated, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now()) RETURNING 1"
)
# The day is the transaction's UTC date, as the budget check reads it (hangar.usage.gate). One call adds
# to four rows (the org's, its project's, its member's, its model's), always in that order.
_ROLLUP_UPSERT = (
    "INSERT INTO usage_usagerollup AS r (org_id, day, dim, key, calls, errors, input_tokens, output_tokens,"
    " reasoning_tokens, cache_read_tokens, cache_write_tokens, cost, estimated_calls)"
    " SELECT %s, (now() AT TIME ZONE 'UTC')::date, d.dim, d.key, 1, %s, %s, %s, %s, %s, %s, %s, %s"
    " FROM (VALUES ('o', ''), ('p', %s::text), ('u', %s::text), ('m', %s::text)) AS d(dim, key)"
    " ON CONFLICT (org_id, dim, key, day) DO UPDATE SET"
    " calls = r.calls + 1, errors = r.errors + EXCLUDED.errors,"
    " input_tokens = r.input_tokens + EXCLUDED.input_tokens,"
    " output_tokens = r.output_tokens + EXCLUDED.output_tokens,"
    " reasoning_tokens = r.reasoning_tokens + EXCLUDED.reasoning_tokens,"
    " cache_read_tokens = r.cache_read_tokens + EXCLUDED.cache_read_tokens,"
    " cache_write_tokens = r.cache_write_tokens + EXCLUDED.cache_write_tokens,"
    " cost = r.cost + EXCLUDED.cost, estimated_calls = r.estimated_calls + EXCLUDED.estimated_calls"
    " RETURNING 1"
)
_RECORD = f"WITH w0 AS ({_LEDGER_INSERT}), w1 AS ({_ROLLUP_UPSERT}) SELECT 1"
# An upsert, so that it touches a row whatever happened to the hold (the closing write needs every write
# to touch one).
_HOLD_SETTLE = (
    "INSERT INTO usage_budgethold AS h (session_id, org_id, project_id, user_id, amount, reserved_at)"
    " VALUES (%s, %s, %s, %s, 0, now()) ON CONFLICT (session_id) DO UPDATE SET amount = 0 RETURNING 1"
)
_RECORD_SETTLED = f"WITH w0 AS ({_LEDGER_INSERT}), w1 AS ({_ROLLUP_UPSERT}), w2 AS ({_HOLD_SETTLE}) SELECT 1"


@dataclass(frozen=True)
class ModelCall:
    """One call to a model, as the ledger keeps it. `outcome`: ok | error | interrupted."""

    org_id: int
    project_id: int | None
    session_id: str
    user_id: int | None
    kind: str  # hangar.usage.models.CallKind
    source: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    latency_ms: int | None = None
    outcome: str = "ok"
    tokens_estimated: bool = False  # the server reported no usage: Hangar counted the tokens

    def tokens(self) -> list[int]:
        return [
            self.input_tokens,
            self.output_tokens,
            self.reasoning_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        ]


def model_key(provider: str, model: str) -> str:
    """The rollup's key of a model: "provider/model" (the allow-list's spelling too)."""
    return f"{provider}/{model}"[:300]


def ledger_writes(call: ModelCall, *, settle_hold: bool = False) -> list[tuple[str, list]]:
    """The call's ledger insert and rollup upsert, each `(sql, params)` returning a row per row written;
    `settle_hold`: the call reserved its ceiling, and its hold is settled with them."""
    ledger = [
        call.org_id,
        call.project_id,
        call.session_id,
        call.user_id,
        call.kind,
        call.source[:16],
        call.provider[:100],
        call.model[:200],
        *call.tokens(),
        call.cost,
        call.latency_ms,
        call.outcome,
        call.tokens_estimated,
    ]
    rollup = [
        call.org_id,
        0 if call.outcome == "ok" else 1,
        *call.tokens(),
        call.cost,
        1 if call.tokens_estimated else 0,
        str(call.project_id or 0),
        str(call.user_id or 0),
        model_key(call.provider, call.model),
    ]
    writes: list[tuple[str, list]] = [(_LEDGER_INSERT, ledger), (_ROLLUP_UPSERT, rollup)]
    if settle_hold:
        writes.append((_HOLD_SETTLE, [call.session_id, call.org_id, call.project_id, call.user_id]))
    return writes


def usage_record(call: ModelCall, *, settle_hold: bool = False) -> None:
    """Record a call that has no other write to ride on (a title call): one statement."""
    writes = ledger_writes(call, settle_hold=settle_hold)
    run(_RECORD_SETTLED if settle_hold else _RECORD, [p for _sql, params in writes for p in params])


def budget_hold_release(session_id: str) -> None:
    """The run that reserved for the session ends: its hold (settled or not: a failed call's) goes."""
    run("DELETE FROM usage_budgethold WHERE session_id = %s", [session_id])
