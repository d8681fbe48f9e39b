"""Event retention: the per-session event log is the resume path of live clients, not an archive, so a
deployment keeps it for HANGAR_EVENT_RETENTION_DAYS (0 keeps it forever). The purge (a beat task,
hangar.engine.purge_events) deletes the events older than that of finished sessions only (idle or
errored, no run waiting, no lease), and records on the session the highest seq purged, so a reader asking
for events after an earlier seq gets a clear answer (selectors.EventsPurged) instead of a silent gap.
Messages and parts stay: they are the conversation; events only retell it."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.models import Event, Session, SessionStatus

FINISHED = (SessionStatus.IDLE, SessionStatus.ERROR)


def _purge_session(session_id: str, cutoff: datetime) -> int:
    """Purge one session's events older than `cutoff` if it is still finished; how many were deleted."""
    with transaction.atomic():
        # Locked (skipping one a runner holds) so no run starts publishing while the old rows go.
        session = (
            Session.objects.select_for_update(skip_locked=True)
            .filter(pk=session_id, status__in=FINISHED, run_requested=False, lease_owner="")
            .only("pk", "events_purged_seq")
            .first()
        )
        if session is None:
            return 0
        old = Event.objects.filter(
            session_id=session.pk, seq__gt=session.events_purged_seq, created_at__lt=cutoff
        )
        through = old.aggregate(through=Max("seq"))["through"]
        if through is None:
            return 0
        # Everything up to the newest old seq goes, so what is kept is always one dense range.
        deleted, _ = Event.objects.filter(
            session_id=session.pk, seq__gt=session.events_purged_seq, seq__lte=through
        ).delete()
        Session.objects.filter(pk=session.pk).update(events_purged_seq=through)
        return deleted


def events_purge(*, now: datetime | None = None) -> dict:
    """Delete the old events of finished sessions (one short transaction per session); counts purged."""
    days = settings.HANGAR_EVENT_RETENTION_DAYS
    if days <= 0:
        return {"sessions": 0, "events": 0}
    cutoff = (now or timezone.now()) - timedelta(days=days)
    # A session created after the cutoff has no event older than it.
    candidates = (
        Session.objects.filter(
            created_at__lt=cutoff, event_seq__gt=F("events_purged_seq"), status__in=FINISHED
        )
        .order_by("created_at")
        .values_list("pk", flat=True)
    )
    sessions = events = 0
    for session_id in candidates.iterator(chunk_size=500):
        deleted = _purge_session(session_id, cutoff)
        if deleted:
            sessions, events = sessions + 1, events + deleted
    if events:
        with transaction.atomic():
            audit_record(
                actor=system_actor(None, "retention"),
                action="events.purge",
                target_type="event",
                data={"sessions": sessions, "events": events, "older_than": cutoff.isoformat()},
            )
    return {"sessions": sessions, "events": events}
