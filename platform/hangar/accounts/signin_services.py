"""Audit rows for password sign-ins. A sign-in belongs to no one org, but each org's admins should see
who entered their org and who failed to: a row goes to every org the account is a member of (an unknown
email writes nothing: there is no org to tell, and the login throttle bounds the guessing)."""

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, User
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record


@transaction.atomic
def sign_in_record(*, email: str, user: User | None, ip: str | None, request_id: str = "") -> int:
    """`auth.sign_in` for `user` (signed in), else `auth.sign_in_failed` for the account `email` names;
    one row per org of the account. How many rows were written."""
    account = user or User.objects.filter(email=email).first()
    if account is None:
        return 0
    action = "auth.sign_in" if user is not None else "auth.sign_in_failed"
    org_ids = list(Membership.objects.filter(user=account).values_list("org_id", flat=True))
    for org_id in org_ids:
        actor = Actor(
            type=ActorType.USER if user is not None else ActorType.SYSTEM,
            org_id=org_id,
            user=user,
            label=account.email,
            ip=ip,
            request_id=request_id,
        )
        audit_record(
            actor=actor,
            action=action,
            target=account,
            data={"method": "password", **({} if user else {"reason": "invalid_credentials"})},
        )
    return len(org_ids)
