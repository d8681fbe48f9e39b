"""Writes for API tokens: create (bound to one member in one org; one minted by a token never outlives
it), revoke (with every token minted through it), and authentication's bookkeeping on a use. Separate
from the membership services (hangar.accounts.services) because a token is a credential with its own
lifecycle: only its digest is stored, and no audit row carries the raw value."""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from hangar.accounts import tokens
from hangar.accounts.actors import Actor
from hangar.accounts.models import ApiToken, Org, Role, User
from hangar.accounts.selectors import require_role
from hangar.accounts.signals import announce_access_changed
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied, ValidationError


@transaction.atomic
def token_create(
    *, actor: Actor, org: Org, user: User, name: str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """Create a token bound to (user, org). Returns (row, raw token): the raw token is shown once."""
    require_role(Actor(type=actor.type, org_id=org.pk, user=user), org.pk, Role.VIEWER)
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": ["Must be in the future."]})
    parent = None
    if actor.token is not None:
        # Locked against a concurrent revocation: a child is either minted before it (and revoked with its
        # parent) or refused.
        parent = ApiToken.objects.select_for_update().get(pk=actor.token.pk)
        if parent.revoked_at is not None:
            raise PermissionDenied("The calling token has been revoked.")
    parent_expiry = getattr(parent, "expires_at", None)
    if parent_expiry is not None and (expires_at is None or expires_at > parent_expiry):
        # A token cannot mint a token that outlives it (a leaked expiring token must not become permanent).
        raise ValidationError(
            {
                "expires_at": [
                    f"Must not be later than the calling token's expiry ({parent_expiry.isoformat()})."
                ]
            }
        )
    raw, prefix = tokens.generate()
    token = ApiToken.objects.create(
        org=org,
        user=user,
        parent=parent,
        name=name,
        prefix=prefix,
        digest=tokens.digest(raw, 0),
        pepper_index=0,
        expires_at=expires_at,
    )
    audit_record(
        actor=actor,
        action="token.create",
        target=token,
        org_id=org.pk,
        data={
            "name": name,
            "prefix": prefix,
            "user": user.email,
            "expires_at": expires_at.isoformat() if expires_at else None,
        },
    )
    return token, raw


@transaction.atomic
def token_revoke(*, actor: Actor, token: ApiToken) -> ApiToken:
    """Owners of a token revoke it; admins revoke anyone's. Revoking twice is a no-op (no second row)."""
    own = actor.user is not None and actor.user.pk == token.user_id
    require_role(actor, token.org_id, Role.VIEWER if own else Role.ADMIN)
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        descendants = _revoke_descendants(token)
        audit_record(
            actor=actor,
            action="token.revoke",
            target=token,
            data={"prefix": token.prefix, "user": token.user.email, "descendants_revoked": descendants},
        )
        announce_access_changed(org_id=token.org_id, user_id=token.user_id)
    return token


def _revoke_descendants(token: ApiToken) -> int:
    """Revoke every token minted through `token`, level by level; how many were still live. Children
    minted while the parent was live are committed before its row lock was granted, so none escapes."""
    level, revoked = [token.pk], 0
    while level:
        children = list(ApiToken.objects.filter(parent_id__in=level).values_list("pk", flat=True))
        revoked += ApiToken.objects.filter(pk__in=children, revoked_at__isnull=True).update(
            revoked_at=token.revoked_at
        )
        level = children
    return revoked


def token_record_use(*, token: ApiToken, raw: str, signed_with_current: bool) -> None:
    """Authentication's own bookkeeping on a token just used (not an action anyone takes, so not audited):
    one signed with an older pepper is re-signed under the current one (the raw token is at hand only
    now), so retiring old peppers later cuts off only tokens unused since the rotation; and a coarse
    last-used stamp, written at most once a minute per token."""
    if not signed_with_current:
        token.digest, token.pepper_index = tokens.digest(raw, 0), 0
        ApiToken.objects.filter(pk=token.pk).update(digest=token.digest, pepper_index=0)
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
