"""How many orgs one account may own (HANGAR_USER_MAX_OWNED_ORGS, an operator setting): anyone with an
account can create an org and own it, and every per-org cap (runs, sandboxes, disk) would multiply with
the orgs one person owns. Checked where an account becomes an owner: creating an org, a role change,
accepting an invitation as owner."""

from __future__ import annotations

from django.conf import settings

from hangar.accounts.models import Membership, Role, User
from hangar.errors import PermissionDenied


def require_owned_orgs_below_cap(user: User) -> None:
    """PermissionDenied when `user` already owns HANGAR_USER_MAX_OWNED_ORGS orgs: every per-org cap (runs,
    sandboxes, disk) would otherwise multiply with the orgs anyone can create. The user's row is locked
    until commit, so two requests at once cannot both take the last place."""
    User.objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True).first()
    cap = int(settings.HANGAR_USER_MAX_OWNED_ORGS)
    owned = Membership.objects.filter(user=user, role=Role.OWNER).count()
    if owned >= cap:
        raise PermissionDenied(
            f"{user.email} already own{'s' if owned == 1 else ''} {owned} orgs, the most one account may "
            f"own here (HANGAR_USER_MAX_OWNED_ORGS={cap}); leave or delete one first."
        )
