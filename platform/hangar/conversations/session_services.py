"""People-facing session lifecycle writes beyond create (which lives in conversations.services):
rename, archive/unarchive, delete. Each is atomic, audited, and tells the org's session-list stream
(`org_wide=True`) with OpenCode's `{sessionID, info}` event payload."""

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import Session
from hangar.conversations.services import DEFAULT_TITLE_PREFIX, session_info
from hangar.errors import PermissionDenied


def _locked(session: Session) -> Session:
    # Re-read under the row lock so concurrent writers (the engine's publish, another rename) serialise.
    return Session.objects.select_for_update().get(pk=session.pk)


def _published_update(session: Session) -> None:
    publish(
        session, "session.updated", {"sessionID": session.pk, "info": session_info(session)}, org_wide=True
    )


def session_update(
    *, actor: Actor, session: Session, title: str | None = None, permission: list | None = None
) -> Session:
    """Rename and/or replace the session-layer permission ruleset (OpenCode's PATCH /session/{id})."""
    with transaction.atomic():
        session = _locked(session)
        changed: dict = {}
        if title is not None and title != session.title:
            changed["title"] = {"from": session.title, "to": title}
            session.title = title
        if permission is not None and permission != session.permission:
            changed["permission"] = {"from": session.permission, "to": permission}
            session.permission = permission
        if not changed:
            return session
        session.save(update_fields=["title", "permission", "updated_at"])
        audit_record(actor=actor, action="session.update", target=session, data=changed)
        _published_update(session)
    return session


def session_admin_update(*, actor: Actor, session: Session, title: str, archived_at) -> Session:
    """A superuser's edit in the Django admin (the admin site checks who may): only these two fields,
    under the row lock, audited and published; everything the engine owns (status, event sequence,
    abort, lease) is left as the row has it now, not as the admin form read it."""
    with transaction.atomic():
        session = _locked(session)
        changed = {
            name: {"from": str(getattr(session, name)), "to": str(value)}
            for name, value in (("title", title), ("archived_at", archived_at))
            if getattr(session, name) != value
        }
        if not changed:
            return session
        session.title, session.archived_at = title, archived_at
        session.save(update_fields=["title", "archived_at", "updated_at"])
        audit_record(actor=actor, action="session.update", target=session, data=changed)
        _published_update(session)
    return session


PROVISIONAL_MAX_CHARS = 60


def provisional_title(text: str) -> str:
    """A session's title from its first prompt until the title agent names it: the prompt's first line,
    spaces collapsed, cut at a word near 60 characters ("" for a prompt with no words)."""
    line = next((" ".join(ln.split()) for ln in text.splitlines() if ln.strip()), "")
    if len(line) <= PROVISIONAL_MAX_CHARS:
        return line
    cut = line[:PROVISIONAL_MAX_CHARS].rsplit(" ", 1)[0] or line[:PROVISIONAL_MAX_CHARS]
    return cut.rstrip(" ,;:.") + "…"


def _still_untitled(session: Session, provisional: str) -> bool:
    """Nobody named the session: it has its default title, or its first prompt's provisional one."""
    return session.title.startswith(DEFAULT_TITLE_PREFIX) or bool(
        provisional and session.title == provisional
    )


def session_title_provisional(*, session: Session, text: str) -> bool:
    """The first prompt's words as the session's title (instead of a timestamp) until the title agent
    names it; only while the session has its default title. Engine-made, not audited; published."""
    title = provisional_title(text)
    if not title:
        return False
    with transaction.atomic():
        locked = _locked(session)
        if not locked.title.startswith(DEFAULT_TITLE_PREFIX) or locked.parent_id:
            return False
        locked.title = session.title = title
        locked.save(update_fields=["title", "updated_at"])
        _published_update(locked)
    return True


def session_title_generated(*, session: Session, title: str, provisional: str = "") -> bool:
    """The title agent's answer, applied only while nobody named the session (its default title, or the
    provisional one from its first prompt, `provisional`: a person may have renamed it meanwhile).
    Engine-made, so not audited; published like any rename."""
    with transaction.atomic():
        session = _locked(session)
        if not _still_untitled(session, provisional):
            return False
        session.title = title
        session.save(update_fields=["title", "updated_at"])
        _published_update(session)
    return True


def _creator_or_admin(actor: Actor, session: Session, what: str) -> None:
    membership = require_role(actor, session.org_id, Role.MEMBER)
    if not (membership.has_role(Role.ADMIN) or session.creator_id == membership.user_id):
        raise PermissionDenied(f"Only the session's creator or an org admin may {what} it.")


def session_archive(*, actor: Actor, session: Session, archived: bool = True, at=None) -> Session:
    """Archive (or unarchive) a session, at `at` (a datetime; OpenCode clients send their own stamp) or now.
    Only its creator or an org admin may (archiving hibernates its sandbox). Repeating the same call
    changes nothing and records nothing."""
    _creator_or_admin(actor, session, "archive" if archived else "unarchive")
    with transaction.atomic():
        session = _locked(session)
        target = (at or session.archived_at or timezone.now()) if archived else None
        if session.archived_at == target:
            return session
        session.archived_at = target
        session.save(update_fields=["archived_at", "updated_at"])
        audit_record(
            actor=actor, action="session.archive" if archived else "session.unarchive", target=session
        )
        _published_update(session)
    return session


def session_delete(*, actor: Actor, session: Session) -> None:
    """Delete a session with its children, messages, parts and event log. Only its creator or an org
    admin may (checked here, so every edge — REST, OpenCode protocol — gets the same rule). The deletion
    event is broadcast (after commit) although its stored row goes with the session: nothing is left to
    replay."""
    _creator_or_admin(actor, session, "delete")
    with transaction.atomic():
        session = _locked(session)
        info = session_info(session)
        children = list(Session.objects.filter(parent_id=session.pk).values_list("pk", flat=True))
        audit_record(
            actor=actor,
            action="session.delete",
            target=session,
            data={"title": session.title, "project": session.project_id, "children": children},
        )
        publish(session, "session.deleted", {"sessionID": session.pk, "info": info}, org_wide=True)
        session.delete()
