"""Scheduled work on accounts' data (hangar.schedule)."""

from celery import shared_task


@shared_task(name="hangar.accounts.purge_audit", ignore_result=True)
def purge_audit() -> int:
    """Enforce each org's audit retention; the number of rows removed."""
    from hangar.accounts.retention_services import audit_retention_purge

    return sum(audit_retention_purge().values())
