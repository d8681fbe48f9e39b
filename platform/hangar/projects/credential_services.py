"""Writes for provider credentials: org credentials (admins and owners) and a member's personal one (its
owner's alone to edit). Separate from the project services because a credential belongs to the org, not to
a project, and its rules (who edits whose key, a new api_base needs its key) are about keys, not settings.
Audit rows never carry a key."""

from django.db import IntegrityError, transaction

from hangar import netguard
from hangar.accounts.actors import Actor
from hangar.accounts.models import Org, Role, User
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied, ValidationError
from hangar.projects import crypto
from hangar.projects.models import ProviderCredential


def _credential_role(actor: Actor, org_id: int, user_id: int | None, *, edit: bool = False) -> None:
    """Org credentials need admin. A personal credential is its owner's alone to edit (an admin editing it
    could send its key anywhere); an admin may still delete (revoke) it."""
    own = user_id is not None and actor.user_id == user_id
    if edit and user_id is not None and not own:
        raise PermissionDenied("Only its owner edits a personal credential.")
    require_role(actor, org_id, Role.MEMBER if own else Role.ADMIN)


def _clean_credential(provider: str | None, models: list | None) -> None:
    if provider is not None and (not isinstance(provider, str) or not provider.strip() or "/" in provider):
        raise ValidationError({"provider": ["Must be a non-empty provider id without '/'."]})
    if models is not None and (
        not isinstance(models, list) or not all(isinstance(m, str) and m for m in models)
    ):
        raise ValidationError({"models": ["Must be a list of model ids."]})


@transaction.atomic
def credential_set(
    *,
    actor: Actor,
    org: Org,
    provider: str,
    api_key: str | None = None,
    api_base: str = "",
    models: list[str] | None = None,
    user: User | None = None,
) -> ProviderCredential:
    """Create or update the (org, user-or-none, provider) credential. `api_key=None` keeps the stored key,
    but only where it already goes: a new api_base needs the key in the same call, or whoever may edit the
    credential could point its key at a server of their choosing."""
    _credential_role(actor, org.pk, user.pk if user else None, edit=True)
    _clean_credential(provider, models)
    try:
        api_base = netguard.clean_api_base(api_base or "")
    except ValueError as exc:
        raise ValidationError({"api_base": [str(exc)]}) from None
    if user is not None and not user.memberships.filter(org=org).exists():
        raise PermissionDenied("A personal credential belongs to a member of this org.")
    credential = (
        ProviderCredential.objects.select_for_update().filter(org=org, user=user, provider=provider).first()
    )
    created = credential is None
    if (
        credential is not None
        and api_key is None
        and api_base != credential.api_base
        and credential.api_key_encrypted
    ):
        raise ValidationError({"api_key": ["Changing api_base needs the key in the same request."]})
    credential = credential or ProviderCredential(org=org, user=user, provider=provider)
    credential.api_base = api_base
    if models is not None:
        credential.models_list = models
    if api_key is not None:
        credential.api_key_encrypted = crypto.encrypt(api_key) if api_key else ""
        credential.api_key_hint = crypto.mask(api_key) if api_key else ""
    try:
        with transaction.atomic():
            credential.save()
    except IntegrityError as exc:
        raise ValidationError({"provider": ["A credential for this provider already exists."]}) from exc
    audit_record(
        actor=actor,
        action="credential.set",
        target=credential,
        org_id=org.pk,
        data={
            "provider": provider,
            "user": user.email if user else None,
            "created": created,
            "api_base": credential.api_base,
            "key_changed": api_key is not None,
        },
    )
    return credential


@transaction.atomic
def credential_delete(*, actor: Actor, credential: ProviderCredential) -> None:
    _credential_role(actor, credential.org_id, credential.user_id)
    audit_record(
        actor=actor,
        action="credential.delete",
        target=credential,
        data={"provider": credential.provider, "user_id": credential.user_id},
    )
    credential.delete()


def credentials_revoke_for_leaving_member(*, org_id: int, user_id: int, **_signal) -> int:
    """A member leaving an org takes their personal provider keys for it with them (called inside
    member_remove's transaction through accounts.signals.member_leaving). Returns how many went."""
    return ProviderCredential.objects.filter(org_id=org_id, user_id=user_id).delete()[0]
