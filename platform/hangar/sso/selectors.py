"""Reads about single sign-on: an org's provider (its admins), and the provider an email's domain routes
to (the sign-in's start, before anyone is signed in)."""

from __future__ import annotations

from hangar.accounts.models import Org
from hangar.projects import crypto
from hangar.sso.models import IdentityProvider, SsoIdentity


def provider_of(*, org: Org) -> IdentityProvider | None:
    return IdentityProvider.objects.filter(org=org).prefetch_related("domains").first()


def provider_for_email(email: str) -> IdentityProvider | None:
    """The enabled provider whose org has proven the email's domain, with its org. An unproven claim routes
    nothing (hangar.sso.domain_services)."""
    domain = email.rpartition("@")[2].strip().lower()
    if not domain:
        return None
    return (
        IdentityProvider.objects.select_related("org")
        .filter(domains__domain=domain, domains__verified_at__isnull=False, enabled=True)
        .first()
    )


def provider_by_id(provider_id: int) -> IdentityProvider | None:
    return IdentityProvider.objects.select_related("org").filter(pk=provider_id, enabled=True).first()


def client_secret(provider: IdentityProvider) -> str:
    """The decrypted client secret, for the code exchange only (never logged, never returned)."""
    return crypto.decrypt(provider.client_secret) if provider.client_secret else ""


def identity_for(provider: IdentityProvider, subject: str) -> SsoIdentity | None:
    return SsoIdentity.objects.select_related("user").filter(provider=provider, subject=subject).first()
