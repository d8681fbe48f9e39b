"""Proving an email domain (writes). A claim routes sign-ins only once proven: the org's admins prove it with
a DNS TXT record (`sso_domain_verify`, looked up through hangar.sso.domain_dns), or the platform operator
approves it (`sso_domain_approve`, manage.py sso_domain_approve). A domain is proven for one org at most
(a partial unique index); other orgs' claims to it stay unproven and route nothing. Audited:
`sso.domain.verify` (with the method)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import NotFound, ValidationError
from hangar.sso import domain_dns
from hangar.sso.models import DomainProof, SsoDomain
from hangar.sso.outbound import release_db_connection

TAKEN = "Already proven by another organisation."


def challenge(claim: SsoDomain) -> tuple[str, str]:
    """(the TXT record's name, its value) that prove `claim`."""
    return domain_dns.CHALLENGE_PREFIX + claim.domain, domain_dns.VALUE_PREFIX + claim.token


def claim_view(claim: SsoDomain) -> dict:
    name, value = challenge(claim)
    return {
        "domain": claim.domain,
        "verified": claim.verified_at is not None,
        "verified_by": claim.verified_by or None,
        "verified_at": claim.verified_at.isoformat() if claim.verified_at else None,
        "txt_name": name,
        "txt_value": value,
    }


def _claim(org: Org, domain: str) -> SsoDomain:
    claim = SsoDomain.objects.filter(provider__org=org, domain=str(domain).strip().lower()).first()
    if claim is None:
        raise NotFound()
    return claim


@transaction.atomic
def _prove(actor: Actor, claim: SsoDomain, method: str) -> SsoDomain:
    claim = SsoDomain.objects.select_for_update().select_related("provider").get(pk=claim.pk)
    if claim.verified_at is not None:
        return claim
    if SsoDomain.objects.filter(domain=claim.domain, verified_at__isnull=False).exists():
        raise ValidationError({"domain": [TAKEN]})
    claim.verified_at, claim.verified_by = timezone.now(), method
    try:
        with transaction.atomic():
            claim.save(update_fields=["verified_at", "verified_by"])
    except IntegrityError:  # proven by another org between the check and here
        raise ValidationError({"domain": [TAKEN]}) from None
    audit_record(
        actor=actor,
        action="sso.domain.verify",
        target=claim.provider,
        data={"domain": claim.domain, "method": method},
    )
    return claim


def sso_domain_verify(
    *, actor: Actor, org: Org, domain: str, resolver: domain_dns.TxtResolver | None = None
) -> SsoDomain:
    """Prove the org's claim to `domain` by its TXT record (admins). ValidationError naming `domain` when the
    record is missing or wrong, or the lookup failed; the claim is unchanged then."""
    require_role(actor, org.pk, Role.ADMIN)
    claim = _claim(org, domain)
    if claim.verified_at is not None:
        return claim
    name, value = challenge(claim)
    release_db_connection()  # no pooled connection held across the lookup
    try:
        found = (resolver or domain_dns.resolver()).txt(name)
    except domain_dns.DnsUnavailable as exc:
        raise ValidationError({"domain": [str(exc)]}) from None
    if value not in found:
        raise ValidationError({"domain": [f"No TXT record at {name} holds {value}."]})
    return _prove(actor, claim, DomainProof.DNS)


def sso_domain_approve(*, actor: Actor, org: Org, domain: str) -> SsoDomain:
    """The platform operator's approval of the org's claim (trusted callers only: it checks no role)."""
    return _prove(actor, _claim(org, domain), DomainProof.OPERATOR)
