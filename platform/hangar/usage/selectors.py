"""Reading spend: usage over a range grouped by day, member, project or model (from the daily rollup, so
the answer costs the same for an org with a million calls as for one with ten), the budgets, the
allow-list. Callers prove the reader may read (hangar.accounts.selectors.check_reader) and pass the org.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Sum
from rest_framework.exceptions import NotFound

from hangar.accounts.models import Org, User
from hangar.projects.models import Project
from hangar.usage.models import Budget, ModelAllowList, UsageDaily, UsageRecord

GROUPS = {
    "day": ("day",),
    "member": ("user_id",),
    "project": ("project_id",),
    "model": ("provider", "model"),
}
SUMS = (
    "calls",
    "errors",
    "cost",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
MAX_DAYS = 366


def _labels(org: Org, group: str, rows: list[dict]) -> None:
    """Name each member row by email and each project row by slug (one read each)."""
    if group == "member":
        ids = {r["user_id"] for r in rows if r["user_id"]}
        emails = dict(User.objects.filter(pk__in=ids).values_list("pk", "email"))
        for r in rows:
            r["member"] = emails.get(r["user_id"], "") if r["user_id"] else ""
    elif group == "project":
        ids = {r["project_id"] for r in rows}
        slugs = dict(Project.objects.filter(org=org, pk__in=ids).values_list("pk", "slug"))
        for r in rows:
            r["project"] = slugs.get(r["project_id"], "")


def usage_report(*, org: Org, start: dt.date, end: dt.date, group: str) -> dict:
    """Spend and tokens per `group` key from `start` to `end` (UTC days, both included), with totals."""
    keys = GROUPS[group]
    base = UsageDaily.objects.filter(org_id=org.pk, day__gte=start, day__lte=end)
    sums = {name: Sum(name) for name in SUMS}
    rows = list(base.values(*keys).annotate(**sums).order_by(*keys))
    for r in rows:
        if "day" in r:
            r["day"] = r["day"].isoformat()
        r["cost"] = round(r["cost"] or 0.0, 6)
    _labels(org, group, rows)
    totals = base.aggregate(**sums)
    totals = {k: (round(v or 0.0, 6) if k == "cost" else v or 0) for k, v in totals.items()}
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "group_by": group,
        "rows": rows,
        "totals": totals,
    }


def ledger_totals(*, org_id: int) -> dict:
    """The org's ledger summed (not the rollup): what the rollup must agree with."""
    sums = UsageRecord.objects.filter(org_id=org_id).aggregate(cost=Sum("cost"), input=Sum("input_tokens"))
    return {"cost": sums["cost"] or 0.0, "input_tokens": sums["input"] or 0}


def budget_list(*, org: Org) -> list[Budget]:
    return list(Budget.objects.filter(org=org).order_by("id"))


def budget_get(*, org: Org, budget_id: int) -> Budget:
    budget = Budget.objects.filter(org=org, pk=budget_id).first()
    if budget is None:
        raise NotFound()
    return budget


def model_allowlist(*, org: Org) -> list[str]:
    row = ModelAllowList.objects.filter(org=org).first()
    return list(row.allowed) if row else []
