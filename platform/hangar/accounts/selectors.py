"""Reads about identity and tenancy, scoped to the actor. A non-member is told "not found" (404), never
"forbidden": an org a caller cannot see must be indistinguishable from one that does not exist."""

from django.db.models import Q, QuerySet
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import ApiToken, Invitation, Membership, Org, Role, User
from hangar.errors import NotFound, PermissionDenied


def _active(user) -> bool:
    return user is not None and getattr(user, "is_authenticated", False) and user.is_active


def membership_for(user, org_id: int | None) -> Membership | None:
    """The user's membership in the org, or None (anonymous user, missing org, not a member)."""
    if not _active(user) or org_id is None:
        return None
    return Membership.objects.select_related("org").filter(user=user, org_id=org_id).first()


def membership_in(user, org_slug: str) -> Membership | None:
    """membership_for, by the org's slug: one query, and a missing org looks the same as a foreign one."""
    if not _active(user):
        return None
    return Membership.objects.select_related("org").filter(user=user, org__slug=org_slug).first()


def check_role(membership: Membership, at_least: str) -> None:
    """PermissionDenied unless the (already proven) membership has at least role `at_least`."""
    if not membership.has_role(at_least):
        raise PermissionDenied(f"This requires the {Role(at_least).value} role or higher.")


def check_reader(membership: Membership) -> None:
    """PermissionDenied unless the membership may read the org's audit log and usage: admins and owners,
    and the auditor role, which may read those and nothing else."""
    if membership.role != Role.AUDITOR and not membership.has_role(Role.ADMIN):
        raise PermissionDenied("This requires the admin or auditor role.")


def require_role(actor: Actor, org_id: int, at_least: str) -> Membership:
    """The actor's membership in `org_id` with at least role `at_least`.

    Raises NotFound when the actor is scoped to another org or is not a member, PermissionDenied when
    the role is too low. System/integration actors without a user are not members of anything. The
    membership an edge loaded for this request (actor.membership) is used as is, not read again."""
    if actor.org_id is not None and actor.org_id != org_id:
        raise NotFound()
    membership = actor.membership
    if membership is None or membership.org_id != org_id or membership.user_id != actor.user_id:
        membership = membership_for(actor.user, org_id)
    if membership is None:
        raise NotFound()
    check_role(membership, at_least)
    return membership


def member_rules_of(*, org_id: int, user_id: int | None) -> list:
    """The member layer of a run (hangar.engine.agents.permissions.merge): that person's own rules in the org,
    [] for no one or a non-member. Not scoped to an actor: the run's own org and person."""
    if user_id is None:
        return []
    rules = Membership.objects.filter(org_id=org_id, user_id=user_id).values_list(
        "permission_rules", flat=True
    )
    return list(next(iter(rules), None) or [])


def orgs_for_user(user) -> QuerySet[Org]:
    return Org.objects.filter(memberships__user=user).order_by("slug")


def memberships_for_user(user) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("org").order_by("org__slug")


def member_list(*, org: Org) -> QuerySet[Membership]:
    return Membership.objects.filter(org=org).select_related("user").order_by("created_at", "id")


def member_get(*, org: Org, membership_id: int) -> Membership:
    membership = Membership.objects.select_related("user").filter(org=org, pk=membership_id).first()
    if membership is None:
        raise NotFound()
    return membership


def token_list(*, org: Org, membership: Membership) -> QuerySet[ApiToken]:
    """Admins see every token of the org; others see only their own."""
    tokens = ApiToken.objects.filter(org=org).select_related("user").order_by("-created_at", "-id")
    if not membership.has_role(Role.ADMIN):
        tokens = tokens.filter(user_id=membership.user_id)
    return tokens


def token_get(*, org: Org, membership: Membership, token_id: int) -> ApiToken:
    token = token_list(org=org, membership=membership).filter(pk=token_id).first()
    if token is None:
        raise NotFound()
    return token


def org_by_slug(slug: str) -> Org | None:
    """An org by slug, unscoped: for system commands (bootstrap) that act before anyone is a member."""
    return Org.objects.filter(slug=slug).first()


def user_active(user_id: int) -> User | None:
    """The user as the database has it now, if still active (a stream re-checks its caller)."""
    return User.objects.filter(pk=user_id, is_active=True).first()


def token_usable(token_id: int) -> ApiToken | None:
    """The token with its user and org as the database has them now, if neither revoked nor expired."""
    return (
        ApiToken.objects.select_related("user", "org")
        .filter(pk=token_id, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .first()
    )


def invitation_list(*, org: Org) -> QuerySet[Invitation]:
    return Invitation.objects.filter(org=org).select_related("invited_by").order_by("-created_at", "-id")


def invitation_get(*, org: Org, invitation_id: int) -> Invitation:
    invitation = invitation_list(org=org).filter(pk=invitation_id).first()
    if invitation is None:
        raise NotFound()
    return invitation


def invitation_by_digest(digest: str) -> Invitation | None:
    """The invitation a link names (its secret's digest), with its org: what the accept page shows."""
    return Invitation.objects.select_related("org").filter(digest=digest).first()


def owners_orgs(org_id: int, *, uncapped: str | None = None) -> dict[int, list[int]]:
    """{each owner of the org: every org they own}, for the caps per person across orgs (anyone may create
    orgs: hangar.engine.run.fairness). `uncapped`: an Org cap field ("max_live_sandboxes"); orgs the operator
    gave their own value of it are left out (judged by that cap alone), and an org that has one itself
    answers {}. One query (two with `uncapped`)."""
    # One filter call: the org's membership joined is the same row that must be an owner's.
    owned = Membership.objects.filter(
        role=Role.OWNER, user__memberships__org_id=org_id, user__memberships__role=Role.OWNER
    )
    if uncapped:
        if Org.objects.filter(pk=org_id, **{f"{uncapped}__isnull": False}).exists():
            return {}
        owned = owned.filter(**{f"org__{uncapped}__isnull": True})
    groups: dict[int, list[int]] = {}
    for user_id, owned_org in owned.values_list("user_id", "org_id").order_by("user_id", "org_id"):
        groups.setdefault(user_id, []).append(owned_org)
    return groups
