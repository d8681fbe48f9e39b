"""How long an org keeps its audit log, and the scheduled purge that enforces it (hangar.schedule)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor, system_actor
from hangar.accounts.models import Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_purge, audit_record
from hangar.errors import ValidationError

MIN_DAYS, MAX_DAYS = 1, 3650


def min_days() -> int:
    """The operator's floor (HANGAR_AUDIT_RETENTION_MIN_DAYS): no org keeps its audit log for less."""
    return max(MIN_DAYS, int(settings.HANGAR_AUDIT_RETENTION_MIN_DAYS))


@transaction.atomic
def org_audit_retention_set(*, actor: Actor, org: Org, days) -> Org:
    require_role(actor, org.pk, Role.ADMIN)
    floor = min_days()
    if isinstance(days, bool) or not isinstance(days, int) or not floor <= days <= MAX_DAYS:
        raise ValidationError({"days": [f"A whole number of days from {floor} to {MAX_DAYS}."]})
    org = Org.objects.select_for_update().get(pk=org.pk)
    before = org.audit_retention_days
    org.audit_retention_days = days
    org.save(update_fields=["audit_retention_days"])
    audit_record(
        actor=actor, action="audit.retention.set", target=org, data={"before": before, "after": days}
    )
    return org


def audit_retention_purge(now: dt.datetime | None = None) -> dict[int, int]:
    """Purge every org's audit rows older than its retention; {org id: rows deleted} (each org in its own
    transaction, with its own audit row when it deleted any)."""
    now = now or timezone.now()
    deleted = {}
    floor = min_days()  # a value stored before the operator raised the floor is read as the floor
    for org_id, stored in Org.objects.order_by("pk").values_list("pk", "audit_retention_days"):
        days = max(stored, floor)
        deleted[org_id] = audit_purge(
            actor=system_actor(org_id, "audit-retention"),
            org_id=org_id,
            before=now - dt.timedelta(days=days),
            retention_days=days,
        )
    return deleted
