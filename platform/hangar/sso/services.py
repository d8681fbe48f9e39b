"""Writes about single sign-on: an org's admins set or remove its provider (audited, the secret redacted);
a verified sign-in provisions the member on first use and reuses them after (audited either way)."""

from __future__ import annotations

import re
import secrets

from django.db import IntegrityError, transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Org, Role, User
from hangar.accounts.selectors import require_role
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied, ValidationError
from hangar.projects import crypto
from hangar.sso.domain_services import claim_view
from hangar.sso.models import IdentityProvider, SsoDomain, SsoIdentity
from hangar.sso.netguard import SsoRefused, check_url

DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
DEFAULT_ROLES = (Role.ADMIN, Role.MEMBER, Role.VIEWER, Role.AUDITOR)


def provider_view(provider: IdentityProvider | None) -> dict | None:
    """What the API and the audit log show of a provider: never the secret, only whether one is set."""
    if provider is None:
        return None
    return {
        "issuer": provider.issuer,
        "client_id": provider.client_id,
        "has_client_secret": bool(provider.client_secret),
        "domains": sorted(d.domain for d in provider.domains.all()),
        "domain_claims": sorted(
            (claim_view(d) for d in provider.domains.all()), key=lambda claim: claim["domain"]
        ),
        "default_role": provider.default_role,
        "enabled": provider.enabled,
    }


def _clean_domains(domains) -> list[str]:
    if not isinstance(domains, list) or not domains or len(domains) > 50:
        raise ValidationError({"domains": ["A list of 1 to 50 email domains."]})
    cleaned = []
    for index, item in enumerate(domains):
        value = item.strip().lower() if isinstance(item, str) else ""
        if not DOMAIN.match(value):
            raise ValidationError({f"domains[{index}]": [f"Not an email domain: {item!r}."]})
        cleaned.append(value)
    return sorted(set(cleaned))


@transaction.atomic
def sso_provider_set(
    *,
    actor: Actor,
    org: Org,
    issuer: str,
    client_id: str,
    client_secret: str | None,
    domains: list,
    default_role: str = Role.MEMBER,
    enabled: bool = True,
) -> IdentityProvider:
    """Create or replace the org's provider. `client_secret` None keeps the stored one."""
    require_role(actor, org.pk, Role.ADMIN)
    try:
        issuer = check_url(issuer)
    except SsoRefused as exc:
        raise ValidationError({"issuer": [str(exc)]}) from None
    if not isinstance(client_id, str) or not client_id.strip() or len(client_id) > 200:
        raise ValidationError({"client_id": ["A client id of at most 200 characters."]})
    if default_role not in DEFAULT_ROLES:
        raise ValidationError({"default_role": [f"Must be one of: {', '.join(DEFAULT_ROLES)}."]})
    cleaned = _clean_domains(domains)
    # Only a proven domain is taken: an unproven claim (anyone's) blocks no one (hangar.sso.domain_services).
    taken = (
        SsoDomain.objects.filter(domain__in=cleaned, verified_at__isnull=False)
        .exclude(provider__org=org)
        .values_list("domain", flat=True)
    )
    if taken:
        raise ValidationError(
            {"domains": [f"Already mapped by another organisation: {', '.join(sorted(taken))}."]}
        )
    provider = IdentityProvider.objects.select_for_update().filter(org=org).first()
    before = provider_view(provider)
    if provider is None:
        if not client_secret:
            raise ValidationError({"client_secret": ["A client secret is required."]})
        provider = IdentityProvider(org=org)
    provider.issuer, provider.client_id = issuer, client_id.strip()
    provider.default_role, provider.enabled = default_role, bool(enabled)
    if client_secret:
        provider.client_secret = crypto.encrypt(client_secret)
    provider.save()
    SsoDomain.objects.filter(provider=provider).exclude(domain__in=cleaned).delete()
    for domain in cleaned:
        try:
            with transaction.atomic():
                SsoDomain.objects.get_or_create(
                    provider=provider, domain=domain, defaults={"token": secrets.token_urlsafe(24)}
                )
        except IntegrityError:  # claimed by this org concurrently
            raise ValidationError({"domains": [f"{domain} is being claimed concurrently."]}) from None
    after = provider_view(provider)
    audit_record(
        actor=actor,
        action="sso.provider.set",
        target=provider,
        data={"before": before, "after": after, "client_secret_changed": bool(client_secret)},
    )
    return provider


@transaction.atomic
def sso_provider_delete(*, actor: Actor, provider: IdentityProvider) -> None:
    require_role(actor, provider.org_id, Role.ADMIN)
    audit_record(
        actor=actor, action="sso.provider.delete", target=provider, data={"before": provider_view(provider)}
    )
    IdentityProvider.objects.filter(pk=provider.pk).delete()


def _actor(org_id: int, user: User | None, label: str, ip: str | None, request_id: str) -> Actor:
    return Actor(
        type=ActorType.USER if user else ActorType.SYSTEM,
        org_id=org_id,
        user=user,
        label=label,
        ip=ip,
        request_id=request_id,
    )


def _provision(
    provider: IdentityProvider, claims: dict, ip: str | None, request_id: str
) -> tuple[User, Membership]:
    """The first sign-in of this subject: a new account for its (verified, mapped) email, made a member
    with the org's default role. An existing account with that email is not taken over: it must be linked
    by signing in with it first (not offered yet), so the provider of one org cannot sign in as a user of
    another."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise PermissionDenied("The identity provider sent no email address.")
    if claims.get("email_verified") is False:
        raise PermissionDenied("The identity provider has not verified this email address.")
    email = User.objects.normalize_email(email).lower()
    if not provider.domains.filter(domain=email.rpartition("@")[2], verified_at__isnull=False).exists():
        raise PermissionDenied(f"{email} is not in a domain this organisation signs in with.")
    if User.objects.filter(email=email).exists():
        raise PermissionDenied(f"An account for {email} already exists; sign in with its password.")
    name = claims.get("name")
    user = User.objects.create_user(email, password=None, name=name[:150] if isinstance(name, str) else "")
    membership = Membership.objects.create(org=provider.org, user=user, role=provider.default_role)
    SsoIdentity.objects.create(
        provider=provider, subject=claims["sub"], user=user, last_sign_in_at=timezone.now()
    )
    audit_record(
        actor=_actor(provider.org_id, user, email, ip, request_id),
        action="member.add",
        target=membership,
        data={"email": email, "role": provider.default_role, "user_created": True, "via": "sso"},
    )
    return user, membership


@transaction.atomic
def sso_sign_in(*, provider: IdentityProvider, claims: dict, ip: str | None, request_id: str = "") -> User:
    """The user a verified ID token signs in: found by (provider, sub), or provisioned on first use.
    PermissionDenied (and no change) when it may not sign in: the caller records the failure."""
    identity = (
        SsoIdentity.objects.select_for_update()
        .select_related("user")
        .filter(provider=provider, subject=claims["sub"])
        .first()
    )
    if identity is None:
        user, _ = _provision(provider, claims, ip, request_id)
        first = True
    else:
        user, first = identity.user, False
        if not user.is_active:
            raise PermissionDenied("This account is disabled.")
        if not Membership.objects.filter(org_id=provider.org_id, user=user).exists():
            raise PermissionDenied("You are no longer a member of this organisation; ask an admin.")
        identity.last_sign_in_at = timezone.now()
        identity.save(update_fields=["last_sign_in_at"])
    audit_record(
        actor=_actor(provider.org_id, user, user.email, ip, request_id),
        action="auth.sign_in",
        target=user,
        data={"method": "sso", "issuer": provider.issuer, "first": first},
    )
    return user


@transaction.atomic
def sso_sign_in_failed(
    *, provider: IdentityProvider, reason: str, ip: str | None, request_id: str = ""
) -> None:
    """Record a refused sign-in through the org's provider (its own transaction: nothing else changed)."""
    audit_record(
        actor=_actor(provider.org_id, None, "sso", ip, request_id),
        action="auth.sign_in_failed",
        target=provider,
        data={"method": "sso", "reason": reason[:300]},
    )
