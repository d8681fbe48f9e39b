"""Credential resolution for the engine: the ONLY place a provider key is decrypted. Call it in the worker,
right before the LLM call; never log or publish the result."""

from dataclasses import dataclass, field

from django.db.models import F, Q

from hangar.projects import crypto
from hangar.projects.models import ProviderCredential


class CredentialNotFound(LookupError):
    pass


@dataclass(frozen=True)
class ResolvedCredential:
    provider: str
    api_base: str
    api_key: str = field(repr=False)  # repr=False: a stray log of the object must not leak the key
    models: list[str] = field(default_factory=list)
    scope: str = "org"  # "user" when a personal credential won


def credential_resolve(*, org_id: int, user_id: int | None, provider: str) -> ResolvedCredential:
    """The user's own credential for `provider` in the org if they have one, else the org's."""
    owners = Q(user__isnull=True) | Q(user_id=user_id) if user_id is not None else Q(user__isnull=True)
    # One query for both: the personal credential (user set) sorts before the org's (NULLs last).
    credential = (ProviderCredential.objects.filter(owners, org_id=org_id, provider=provider)
                  .order_by(F("user_id").asc(nulls_last=True), "id").first())
    if credential is None:
        raise CredentialNotFound(f"no credential for provider {provider!r}")
    return _resolved(credential, "user" if credential.user_id is not None else "org")


def _resolved(credential: ProviderCredential, scope: str) -> ResolvedCredential:
    key = crypto.decrypt(credential.api_key_encrypted) if credential.api_key_encrypted else ""
    return ResolvedCredential(provider=credential.provider, api_base=credential.api_base, api_key=key,
                              models=list(credential.models_list or []), scope=scope)
