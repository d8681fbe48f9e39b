"""Invitations by link: an admin invites an email with a role, the link goes out by mail (Django's mail
backend, after commit), and whoever holds the link joins the org once, before it expires.

The link carries a random secret; only its SHA-256 digest is stored, so the table leaks no usable link.
Accepting is bound to the invited email: a signed-in user accepts only an invitation to their own address,
and someone signed out may create the account only when no account has that address (an existing account
must sign in first, so an invitation cannot be used to set another org's member's password)."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Invitation, Membership, Org, Role, User
from hangar.accounts.ownership_services import require_owned_orgs_below_cap
from hangar.accounts.selectors import require_role
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record
from hangar.errors import NotAuthenticated, NotFound, PermissionDenied, ValidationError


class InvitationGone(Exception):
    """The link was used, revoked or has expired (`state` says which)."""

    def __init__(self, state: str):
        super().__init__(state)
        self.state = state


def invitation_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def invitation_link(raw: str) -> str:
    return f"{settings.PUBLIC_URL}/invite/{raw}"


def _send(org_name: str, email: str, role: str, raw: str, inviter: str) -> None:
    send_mail(
        subject=f"You are invited to {org_name} on Hangar",
        message=(
            f"{inviter or 'An admin'} invited you to join {org_name} on Hangar as {role}.\n\n"
            f"Accept: {invitation_link(raw)}\n\n"
            f"The link works once and expires in {settings.HANGAR_INVITATION_HOURS} hours."
        ),
        from_email=None,
        recipient_list=[email],
    )


@transaction.atomic
def invitation_create(
    *, actor: Actor, org: Org, email: str, role: str = Role.MEMBER
) -> tuple[Invitation, str]:
    """Invite `email` with `role` (admins; the owner role only by owners). Returns (row, raw secret); the
    mail with the link is sent once the transaction commits."""
    acting = require_role(actor, org.pk, Role.ADMIN)
    if role not in Role.values:
        raise ValidationError({"role": [f"Must be one of: {', '.join(Role.values)}."]})
    if role == Role.OWNER and acting.role != Role.OWNER:
        raise PermissionDenied("Only an owner can grant, change or remove the owner role.")
    email = User.objects.normalize_email(email).lower()
    if Membership.objects.filter(org=org, user__email=email).exists():
        raise ValidationError({"email": ["This user is already a member."]})
    # One pending invitation per address: the org's row lock orders two admins inviting at once.
    Org.objects.select_for_update().filter(pk=org.pk).first()
    pending = Invitation.objects.filter(
        org=org, email=email, accepted_at=None, revoked_at=None, expires_at__gt=timezone.now()
    ).exists()
    if pending:
        raise ValidationError(
            {
                "email": [
                    f"{email} already has a pending invitation. Revoke it to send a new one "
                    "(for another role or a fresh link)."
                ]
            }
        )
    raw = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        org=org,
        email=email,
        role=role,
        digest=invitation_digest(raw),
        invited_by=actor.user,
        expires_at=timezone.now() + dt.timedelta(hours=settings.HANGAR_INVITATION_HOURS),
    )
    audit_record(
        actor=actor,
        action="member.invite",
        target=invitation,
        data={"email": email, "role": role, "expires_at": invitation.expires_at.isoformat()},
    )
    inviter, org_name = actor.label, org.name
    transaction.on_commit(lambda: _send(org_name, email, role, raw, inviter))
    return invitation, raw


@transaction.atomic
def invitation_revoke(*, actor: Actor, invitation: Invitation) -> Invitation:
    require_role(actor, invitation.org_id, Role.ADMIN)
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.state() != "pending":
        raise ValidationError({"invitation": [f"This invitation is already {invitation.state()}."]})
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    audit_record(
        actor=actor, action="member.invite_revoke", target=invitation, data={"email": invitation.email}
    )
    return invitation


@dataclass(frozen=True)
class NewAccount:
    password: str
    name: str = ""


def _pending(raw: str) -> Invitation:
    """The invitation the link names, locked; NotFound for no such link, InvitationGone for a spent one."""
    invitation = (
        Invitation.objects.select_for_update()
        .select_related("org")
        .filter(digest=invitation_digest(raw))
        .first()
    )
    if invitation is None:
        raise NotFound()
    if invitation.state() != "pending":
        raise InvitationGone(invitation.state())
    return invitation


def _accepting_user(invitation: Invitation, user: User | None, new_account: NewAccount | None) -> User:
    if user is not None:
        if user.email.lower() != invitation.email:
            raise PermissionDenied(f"This invitation is for {invitation.email}; sign in with that address.")
        return user
    if User.objects.filter(email=invitation.email).exists():
        raise NotAuthenticated(
            f"An account for {invitation.email} exists: sign in, then open the link again."
        )
    if new_account is None:
        raise ValidationError({"password": ["Choose a password to create your account."]})
    from django.contrib.auth.password_validation import validate_password

    candidate = User(email=invitation.email, name=new_account.name)
    try:
        validate_password(new_account.password, candidate)
    except Exception as exc:  # django.core.exceptions.ValidationError: name the field
        messages = getattr(exc, "messages", [str(exc)])
        raise ValidationError({"password": messages}) from None
    return User.objects.create_user(invitation.email, password=new_account.password, name=new_account.name)


@transaction.atomic
def invitation_accept(
    *,
    raw: str,
    user: User | None,
    new_account: NewAccount | None = None,
    ip: str | None = None,
    request_id: str = "",
) -> Membership:
    """Join the invitation's org as its role, signed in as the invited email or as a new account for it.
    The row is locked and marked accepted in the same transaction as the membership: a link works once."""
    invitation = _pending(raw)
    created = user is None
    user = _accepting_user(invitation, user, new_account)
    if Membership.objects.filter(org=invitation.org, user=user).exists():
        raise ValidationError({"email": ["You are already a member of this org."]})
    if invitation.role == Role.OWNER:
        require_owned_orgs_below_cap(user)
    membership = Membership.objects.create(org=invitation.org, user=user, role=invitation.role)
    invitation.accepted_at, invitation.accepted_by = timezone.now(), user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    actor = Actor(
        type=ActorType.USER,
        org_id=invitation.org_id,
        user=user,
        label=user.email,
        ip=ip,
        request_id=request_id,
    )
    audit_record(
        actor=actor,
        action="member.add",
        target=membership,
        data={
            "email": user.email,
            "role": invitation.role,
            "user_created": created,
            "invitation": invitation.pk,
        },
    )
    return membership
