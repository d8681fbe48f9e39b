"""Writes about identity and tenancy: orgs, members and their roles, a member's own permission rules, staff
users. Each service is atomic and records an audit event in the same transaction. Role rules: admins and
owners manage members; only an owner grants, changes or removes the owner role; an org never loses its
last owner. API tokens are token_services', an org's policies org_policy_services'."""

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from hangar.accounts.actors import Actor
from hangar.accounts.invitation_services import invitation_create
from hangar.accounts.models import ApiToken, Invitation, Membership, Org, Role, User
from hangar.accounts.ownership_services import require_owned_orgs_below_cap
from hangar.accounts.permission_rules import clean_permission_rules
from hangar.accounts.selectors import require_role
from hangar.accounts.signals import announce_access_changed, member_leaving
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied, ValidationError


@transaction.atomic
def org_create(*, actor: Actor, name: str, slug: str = "", owner: User | None = None) -> Org:
    """Create an org; `owner` (default: the acting user) becomes its first owner. An API token acts
    inside the one org it is bound to, so it cannot create another: that takes a signed-in person."""
    if actor.token is not None:
        raise PermissionDenied("An API token is bound to its org; sign in to create an org.")
    slug = slug or slugify(name)[:80]
    if not slug:
        raise ValidationError({"slug": ["A slug is required."]})
    if Org.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": ["An org with this slug already exists."]})
    owner = owner or actor.user
    if owner is None:
        raise ValidationError({"owner": ["An org needs an owner."]})
    if actor.user is not None:  # a person; the operator's own tools (bootstrap) are not capped
        require_owned_orgs_below_cap(owner)
    org = Org.objects.create(name=name, slug=slug)
    Membership.objects.create(org=org, user=owner, role=Role.OWNER)
    audit_record(
        actor=actor, action="org.create", target=org, org_id=org.pk, data={"slug": slug, "owner": owner.email}
    )
    return org


def _valid_role(role: str) -> str:
    if role not in Role.values:
        raise ValidationError({"role": [f"Must be one of: {', '.join(Role.values)}."]})
    return role


def _owner_count(org_id: int) -> int:
    return Membership.objects.filter(org_id=org_id, role=Role.OWNER).count()


def _lock_org_roles(org_id: int) -> None:
    """Serialise the changes that may take away an owner (remove, leave, demote) per org: each counts the
    owners and then writes, so two running at once would each see the other owner and leave none. The org
    row's lock is held until commit; the second change counts after the first has committed."""
    Org.objects.select_for_update().filter(pk=org_id).values_list("pk", flat=True).first()


def _guard_owner_change(acting: Membership, target_role: str, new_role: str | None) -> None:
    """Only an owner touches the owner role (granting it, or changing/removing an owner)."""
    if Role.OWNER in (target_role, new_role) and acting.role != Role.OWNER:
        raise PermissionDenied("Only an owner can grant, change or remove the owner role.")


@transaction.atomic
def member_add(
    *, actor: Actor, org: Org, email: str, role: str = Role.MEMBER, name: str = ""
) -> Membership | Invitation:
    """Add a new user to the org by email (created with an unusable password). An account that already
    exists is never bound to an org it did not join: it is invited instead (the Invitation is returned; its
    owner joins by accepting the link mailed to them)."""
    acting = require_role(actor, org.pk, Role.ADMIN)
    _valid_role(role)
    _guard_owner_change(acting, Role.VIEWER, role)
    email = User.objects.normalize_email(email).lower()
    user = User.objects.filter(email=email).first()
    if user is not None:
        if Membership.objects.filter(org=org, user=user).exists():
            raise ValidationError({"email": ["This user is already a member."]})
        invitation, _raw = invitation_create(actor=actor, org=org, email=email, role=role)
        return invitation
    user = User.objects.create_user(email, password=None, name=name)  # set_password(None): unusable
    membership = Membership.objects.create(org=org, user=user, role=role)
    audit_record(
        actor=actor,
        action="member.add",
        target=membership,
        data={"email": email, "role": role, "user_created": True},
    )
    return membership


@transaction.atomic
def member_ensure(*, actor: Actor, org: Org, user: User, role: str = Role.MEMBER) -> Membership:
    """Make `user` a member of `org` with `role` unless already a member (then nothing changes). For trusted
    callers only (management commands such as bootstrap): it checks no role of the actor."""
    _valid_role(role)
    membership = Membership.objects.filter(org=org, user=user).first()
    if membership is None:
        membership = Membership.objects.create(org=org, user=user, role=role)
        audit_record(
            actor=actor,
            action="member.add",
            target=membership,
            org_id=org.pk,
            data={"email": user.email, "role": role, "user_created": False},
        )
    return membership


@transaction.atomic
def member_role_change(*, actor: Actor, membership: Membership, role: str) -> Membership:
    _lock_org_roles(membership.org_id)
    acting = require_role(actor, membership.org_id, Role.ADMIN)
    _valid_role(role)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    _guard_owner_change(acting, membership.role, role)
    old = membership.role
    if old == Role.OWNER and role != Role.OWNER and _owner_count(membership.org_id) <= 1:
        raise ValidationError({"role": ["The last owner cannot be demoted."]})
    if role == Role.OWNER and old != Role.OWNER:
        require_owned_orgs_below_cap(membership.user)
    membership.role = role
    membership.save(update_fields=["role"])
    announce_access_changed(org_id=membership.org_id, user_id=membership.user_id)
    audit_record(
        actor=actor,
        action="member.role_change",
        target=membership,
        data={"email": membership.user.email, "from": old, "to": role},
    )
    return membership


@transaction.atomic
def member_remove(*, actor: Actor, membership: Membership) -> None:
    """Admins remove members; anyone may leave. The last owner can do neither."""
    leaving = actor.user is not None and actor.user.pk == membership.user_id
    _lock_org_roles(membership.org_id)
    acting = require_role(actor, membership.org_id, Role.VIEWER if leaving else Role.ADMIN)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if not leaving:
        _guard_owner_change(acting, membership.role, None)
    if membership.role == Role.OWNER and _owner_count(membership.org_id) <= 1:
        raise ValidationError({"role": ["The last owner cannot be removed."]})
    # Their tokens for this org die with the membership: a token must never outlive its grant.
    ApiToken.objects.filter(
        org_id=membership.org_id, user_id=membership.user_id, revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    # Their personal provider keys for this org go too, in this transaction: no run may spend a former
    # member's key. The layers below accounts' callers own those (projects), so they answer a signal.
    replies: list[tuple[Any, Any]] = member_leaving.send(
        sender=None, org_id=membership.org_id, user_id=membership.user_id
    )
    revoked = sum(int(count) for _receiver, count in replies)
    audit_record(
        actor=actor,
        action="member.remove",
        target=membership,
        data={"email": membership.user.email, "role": membership.role, "credentials_revoked": revoked},
    )
    membership.delete()
    announce_access_changed(org_id=membership.org_id, user_id=membership.user_id)


@transaction.atomic
def user_ensure_staff(
    *, actor: Actor, email: str, password: str, reset_password: bool = False
) -> tuple[User, bool]:
    """The user with `email`, made staff (so they can use /admin); created with `password` if new, or
    given it if `reset_password`. Returns (user, created). For the first-run command, acting as the
    system."""
    user = User.objects.filter(email=email).first()
    if user is None:
        user = User.objects.create_user(email, password=password, is_staff=True)
        audit_record(actor=actor, action="user.create", target=user, data={"email": email, "staff": True})
        return user, True
    changed = []
    if reset_password:
        user.set_password(password)
        changed.append("password")
    if not user.is_staff:
        user.is_staff = True
        changed.append("is_staff")
    if changed:
        user.save(update_fields=changed)
        audit_record(actor=actor, action="user.update", target=user, data={"email": email, "fields": changed})
    return user, False


MAX_MEMBER_RULES = 200  # a person's own rules: enough for any taste, bounded for every tool call


@transaction.atomic
def member_permission_rules_set(*, actor: Actor, org: Org, rules: list) -> Membership:
    """Replace the actor's own permission rules in `org` (the member layer of hangar.engine.agents.permissions:
    applied to the runs they start or prompt, only ever narrowing). Anyone may keep rules for themselves;
    no one sets another person's. Running sessions apply them at their next step."""
    membership = require_role(actor, org.pk, Role.VIEWER)
    cleaned = clean_permission_rules(rules, field="rules")
    if len(cleaned) > MAX_MEMBER_RULES:
        raise ValidationError({"rules": [f"At most {MAX_MEMBER_RULES} rules."]})
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    before, membership.permission_rules = membership.permission_rules, cleaned
    membership.save(update_fields=["permission_rules"])
    audit_record(
        actor=actor,
        action="member.permission_rules.set",
        target=membership,
        data={"from": before, "to": cleaned},
    )
    return membership
