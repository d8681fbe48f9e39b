"""The check before every model call: is the model on the org's allow-list, and does every budget that
covers the call (the org's, its project's, its prompter's) leave room for it?

One prepared statement, indexed: the org's allow-list row, its budgets covering (project, member), and each
budget's spend so far this period summed from the daily rollup's rows of its org, project or member (at
most 31 rows each, never the ledger). An org with neither budgets nor a list reads two index probes that
find nothing.

A hard limit stops the call when the period's spend has reached it, or when the spend plus the caller's
estimate of the call (what the session's previous call cost) would pass it: the call that would exceed the
limit is not made. That read takes no lock: the verdict lists the hard budgets covering the call
(`Verdict.hard`), and the engine then reserves the call's ceiling against them atomically
(hangar.conversations.budget_services.session_budget_reserve), so runs of one org in flight at once cannot
together pass a limit.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from hangar.rawsql import run

# The two columns, on named parameters: %(org)s, %(project)s, %(user)s, %(today)s, %(month)s. A run's step
# read carries them in its own statement (hangar.conversations.loop_selectors), so a step's check costs no
# round trip of its own.
GATE_COLUMNS = (
    "(SELECT a.allowed FROM usage_modelallowlist a WHERE a.org_id = %(org)s),"
    " (SELECT coalesce(json_agg(json_build_array(b.id, b.scope, b.period, b.hard_limit, b.soft_limit,"
    "  b.alerted_for, b.project_id, b.user_id, b.override_amount, b.override_for,"
    "  (SELECT coalesce(sum(r.cost), 0) FROM usage_usagerollup r WHERE r.org_id = b.org_id"
    "   AND r.dim = CASE b.scope WHEN 'org' THEN 'o' WHEN 'project' THEN 'p' ELSE 'u' END"
    "   AND r.key = CASE b.scope WHEN 'org' THEN '' WHEN 'project' THEN b.project_id::text"
    "    ELSE b.user_id::text END"
    "   AND r.day >= CASE WHEN b.period = 'day' THEN %(today)s::date ELSE %(month)s::date END))"
    "  ORDER BY b.id), '[]')"
    "  FROM usage_budget b WHERE b.org_id = %(org)s"
    "  AND (b.project_id IS NULL OR b.project_id = %(project)s) AND (b.user_id IS NULL OR b.user_id = %(user)s))"
)
_GATE = "SELECT " + GATE_COLUMNS


def gate_params(*, org_id: int, project_id: int | None, user_id: int | None) -> dict:
    """GATE_COLUMNS' parameters, for the periods as of now (UTC days and months)."""
    today = timezone.now().astimezone(dt.UTC).date()
    return {
        "org": org_id,
        "project": project_id,
        "user": user_id,
        "today": today,
        "month": today.replace(day=1),
    }


@dataclass(frozen=True)
class GateRow:
    """What GATE_COLUMNS read: the org's allow-list and the budgets covering the call, with their spend."""

    allowed: Any  # a JSON list or text, as the driver gives it
    budgets: Any
    today: dt.date


@dataclass(frozen=True)
class BudgetState:
    id: int
    scope: str
    period: str
    hard_limit: float | None
    soft_limit: float | None
    alerted_for: str | None
    project_id: int | None
    user_id: int | None
    spent: float
    period_start: dt.date
    held: float = 0.0  # reserved by other calls in flight, when a reservation found no room
    needed: float = 0.0  # the refused call's ceiling, idem

    def view(self) -> dict:
        """What the session's error event and the audit row say of the budget."""
        return {
            "id": self.id,
            "scope": self.scope,
            "period": self.period,
            "hard_limit": self.hard_limit,
            "soft_limit": self.soft_limit,
            "spent": round(self.spent, 6),
            **({"project": self.project_id} if self.project_id else {}),
            **({"member": self.user_id} if self.user_id else {}),
            **({"held": round(self.held, 6), "needed": round(self.needed, 6)} if self.needed else {}),
        }


@dataclass(frozen=True)
class Verdict:
    refused_model: str | None  # the model, when the allow-list refuses it
    blocked: BudgetState | None  # the first budget whose hard limit stops the call
    alerts: list[BudgetState]  # budgets past their soft limit not yet alerted this period
    hard: tuple[BudgetState, ...] = ()  # the budgets with a hard limit covering the call


def _allowed(allowed: list[str] | None, provider: str, model: str) -> bool:
    return not allowed or f"{provider}/{model}" in allowed or model in allowed


def usage_gate(
    *,
    org_id: int,
    project_id: int | None,
    user_id: int | None,
    provider: str,
    model: str,
    estimate: float = 0.0,
    read: GateRow | None = None,
) -> Verdict:
    """The verdict on a call; `read`: GATE_COLUMNS as the caller's own statement just read them (else read
    here)."""
    if read is None:
        params = gate_params(org_id=org_id, project_id=project_id, user_id=user_id)
        row = run(_GATE, params)[0]
        read = GateRow(row[0], row[1], params["today"])
    return verdict(read, provider, model, estimate)


def verdict(read: GateRow, provider: str, model: str, estimate: float = 0.0) -> Verdict:
    today = read.today
    month = today.replace(day=1)
    allowed = json.loads(read.allowed) if isinstance(read.allowed, str) else read.allowed
    if not _allowed(allowed, provider, model):
        return Verdict(refused_model=f"{provider}/{model}", blocked=None, alerts=[])
    budgets = json.loads(read.budgets) if isinstance(read.budgets, str) else read.budgets
    blocked, alerts, hard_ones = None, [], []
    for bid, scope, period, hard, soft, alerted, pid, uid, extra, extra_for, spent in budgets:
        start = today if period == "day" else month
        if hard is not None and extra and extra_for == start.isoformat():
            hard = hard + extra  # an admin's override for this period
        state = BudgetState(bid, scope, period, hard, soft, alerted, pid, uid, float(spent), start)
        if hard is not None:
            hard_ones.append(state)
        if hard is not None and blocked is None and (state.spent >= hard or state.spent + estimate > hard):
            blocked = state
        if soft is not None and state.spent >= soft and alerted != state.period_start.isoformat():
            alerts.append(state)
    return Verdict(refused_model=None, blocked=blocked, alerts=alerts, hard=tuple(hard_ones))
