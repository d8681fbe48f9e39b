"""Credential resolution for the engine: the ONLY place a provider key is decrypted. Call it in the worker,
right before the LLM call; never log or publish the result."""

from dataclasses import dataclass, field

from hangar.projects import crypto
from hangar.projects.models import ProviderCredential
from hangar.rawsql import instances, run, select_list

# The personal credential (user set) sorts before the org's (NULLs last), and counts only while its
# owner is still a member of the org. A prepared statement: every run of every session resolves its
# credential when it starts.
_FIND = (
    f"SELECT {select_list(ProviderCredential, 'c')} FROM projects_providercredential c"
    " WHERE c.org_id = %s AND c.provider = %s AND (c.user_id IS NULL OR (c.user_id = %s AND EXISTS"
    " (SELECT 1 FROM accounts_membership m WHERE m.org_id = c.org_id AND m.user_id = c.user_id)))"
    " ORDER BY c.user_id ASC NULLS LAST, c.id ASC LIMIT 1"
)


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
    rows = run(_FIND, [org_id, provider, user_id])  # user_id None matches no personal credential
    if not rows:
        raise CredentialNotFound(f"no credential for provider {provider!r}")
    (credential,) = instances(((ProviderCredential, "c"),), rows[0])
    return _resolved(credential, "user" if credential.user_id is not None else "org")


def _resolved(credential: ProviderCredential, scope: str) -> ResolvedCredential:
    key = crypto.decrypt(credential.api_key_encrypted) if credential.api_key_encrypted else ""
    return ResolvedCredential(
        provider=credential.provider,
        api_base=credential.api_base,
        api_key=key,
        models=list(credential.models_list or []),
        scope=scope,
    )
