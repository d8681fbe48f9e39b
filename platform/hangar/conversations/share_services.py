"""Share links (OpenCode's `/share` and `/unshare`), kept inside the tenant's rules: OpenCode publishes a
session to a public third-party server; Hangar gives a link to a read-only live view in its own web app
(`/share/<token>`), which only the org's members may open, or anyone holding the link where the org's
`share_policy` is `link`. A link expires (HANGAR_SHARE_TTL_HOURS) and is revoked by /unshare; both are
audited, without the token. What the view shows is hangar.conversations.share_selectors's.

Sharing takes a member (a viewer may look but not publish); an org whose policy is `off` refuses it."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.conversations.models import Session, SessionShare
from hangar.conversations.session_services import _locked, _published_update
from hangar.errors import PermissionDenied
from hangar.ids import ascending

DEFAULT_TTL_HOURS = 24 * 7


def share_url(token: str) -> str:
    return f"{settings.PUBLIC_URL}/share/{token}"


def _ttl() -> timedelta:
    return timedelta(hours=int(getattr(settings, "HANGAR_SHARE_TTL_HOURS", DEFAULT_TTL_HOURS)))


def live_share(session: Session) -> SessionShare | None:
    return (
        SessionShare.objects.filter(session=session, revoked_at=None, expires_at__gt=timezone.now())
        .order_by("-created_at")
        .first()
    )


def session_share(*, actor: Actor, session: Session) -> Session:
    """Give the session a share link (the live one if it has one) and set `share.url` on it, as OpenCode
    does. PermissionDenied when the org does not allow sharing."""
    require_role(actor, session.org_id, Role.MEMBER)
    policy = session.org.share_policy
    if policy == "off":
        raise PermissionDenied("Sharing is turned off for this organisation (its share policy).")
    with transaction.atomic():
        session = _locked(session)
        share = live_share(session)
        if share is None:
            share = SessionShare.objects.create(
                id=ascending("share"),
                token=secrets.token_urlsafe(32),
                org_id=session.org_id,
                session=session,
                audience="link" if policy == "link" else "members",
                created_by=actor.user,
                expires_at=timezone.now() + _ttl(),
            )
            audit_record(
                actor=actor,
                action="session.share",
                target=session,
                data={"share": share.pk, "audience": share.audience, "expires": share.expires_at.isoformat()},
            )
        url = share_url(share.token)
        if session.share != {"url": url}:
            session.share = {"url": url}
            session.save(update_fields=["share", "updated_at"])
            _published_update(session)
    return session


def session_unshare(*, actor: Actor, session: Session) -> Session:
    """Revoke every link of the session and clear `share`: an open view stops at its next refresh."""
    require_role(actor, session.org_id, Role.MEMBER)
    with transaction.atomic():
        session = _locked(session)
        revoked = list(
            SessionShare.objects.filter(session=session, revoked_at=None).values_list("pk", flat=True)
        )
        if revoked:
            SessionShare.objects.filter(pk__in=revoked).update(revoked_at=timezone.now())
            audit_record(actor=actor, action="session.unshare", target=session, data={"shares": revoked})
        if session.share is not None:
            session.share = None
            session.save(update_fields=["share", "updated_at"])
            _published_update(session)
    return session
