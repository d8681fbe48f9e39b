"""Writing the audit log. Call `audit_record` inside the same transaction as the change it records."""

from typing import Protocol

from django.db import connection, transaction

from hangar.audit.models import AuditEvent


class AuditActor(Protocol):
    """What the log records of whoever acts (`hangar.accounts.actors.Actor` has this shape). The audit app
    is the bottom of the store: every other store app records through it, so it imports none of them."""

    @property
    def type(self) -> str: ...
    @property
    def org_id(self) -> int | None: ...
    @property
    def id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def ip(self) -> str | None: ...
    @property
    def request_id(self) -> str: ...


def audit_record(
    *,
    actor: AuditActor,
    action: str,
    target=None,
    target_type: str = "",
    target_id: str = "",
    data: dict | None = None,
    org_id: int | None = None,
) -> AuditEvent:
    """Append one audit row. `target` may be a model instance (its type and pk are recorded)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the change it records")
    if target is not None:
        target_type = target_type or target._meta.label_lower
        target_id = target_id or str(target.pk)
    return AuditEvent.objects.create(
        org_id=org_id if org_id is not None else actor.org_id,
        actor_type=actor.type,
        actor_id=actor.id,
        actor_label=actor.label[:200],
        action=action,
        target_type=target_type,
        target_id=target_id,
        data=data or {},
        ip=actor.ip,
        request_id=actor.request_id,
    )


def audit_purge(*, actor: AuditActor, org_id: int, before, retention_days: int) -> int:
    """Delete the org's audit rows older than `before` and record that it did (when it removed any), in one
    transaction; the database lets this DELETE through only because the transaction says so (migration
    0003)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hangar.audit_purge = 'on'")
            cursor.execute(
                "DELETE FROM audit_auditevent WHERE org_id = %s AND created_at < %s", [org_id, before]
            )
            deleted = cursor.rowcount
            cursor.execute("SET LOCAL hangar.audit_purge = 'off'")
        if not deleted:  # a run that removed nothing leaves no row either (it runs daily, per org)
            return 0
        audit_record(
            actor=actor,
            action="audit.purge",
            org_id=org_id,
            target_type="accounts.org",
            target_id=str(org_id),
            data={"before": before.isoformat(), "deleted": deleted, "retention_days": retention_days},
        )
    return deleted
