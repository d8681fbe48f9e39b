"""Session writes that OpenCode's protocol needs and the store does not offer yet: rename / re-permission /
archive (PATCH /session/{id}) and delete. Atomic, audited, published like every store service.
(Candidates to move into hangar.conversations.services once the REST API needs them too.)"""

from datetime import UTC, datetime

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import Session
from hangar.conversations.services import session_info


def session_update(*, actor: Actor, session: Session, title: str | None = None, permission: list | None = None,
                   archived_ms: float | None = None) -> Session:
    changed: dict = {}
    if title is not None:
        session.title = changed["title"] = title[:200]
    if permission is not None:
        session.permission = changed["permission"] = permission
    if archived_ms is not None:
        session.archived_at = datetime.fromtimestamp(archived_ms / 1000, tz=UTC) if archived_ms else None
        changed["archived"] = archived_ms
    with transaction.atomic():
        session.save(update_fields=["title", "permission", "archived_at", "updated_at"])
        audit_record(actor=actor, action="session.update", target=session, data=changed)
        publish(session, "session.updated", {"info": session_info(session)}, org_wide=True)
    return session


def session_delete(*, actor: Actor, session: Session) -> None:
    """Delete the session and its children. `session.deleted` goes out on the org and project groups
    before the rows go (the event log dies with the session, so the notification is sent directly)."""
    from hangar.conversations.events import org_group, project_group, session_group
    from hangar.realtime.broadcast import broadcast

    info = session_info(session)
    with transaction.atomic():
        audit_record(actor=actor, action="session.delete", target=session, data={"project": session.project_id})
        Session.objects.filter(pk=session.pk).delete()
        message = {"seq": None, "type": "session.deleted", "payload": {"info": info}, "session": session.pk}
        groups = [session_group(session.pk), project_group(session.project_id), org_group(session.org_id)]
        transaction.on_commit(lambda: broadcast(groups, message))
