"""Single sign-on with OpenID Connect: an org's identity provider, the email domains it answers for, and
the link from a provider's subject to the Hangar user it provisioned."""

from django.conf import settings
from django.db import models

from hangar.accounts.models import Role


class IdentityProvider(models.Model):
    """An org's OpenID Connect provider. `client_secret` is encrypted at rest (hangar.projects.crypto),
    as provider keys are; the issuer is a tenant-chosen outbound connection (hangar.sso.netguard)."""

    org = models.OneToOneField("accounts.Org", on_delete=models.CASCADE, related_name="identity_provider")
    issuer = models.CharField(max_length=500)
    client_id = models.CharField(max_length=200)
    client_secret = models.TextField(blank=True)
    default_role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)


class DomainProof(models.TextChoices):
    DNS = "dns"
    OPERATOR = "operator"


class SsoDomain(models.Model):
    """An org's claim to an email domain. It routes sign-ins to the org's provider only once proven
    (`verified_at`): a DNS TXT record `_hangar-challenge.<domain>` holding `hangar-domain-verification=<token>`,
    or the operator's approval. Any number of orgs may claim a domain; only one may have it proven."""

    provider = models.ForeignKey(IdentityProvider, on_delete=models.CASCADE, related_name="domains")
    domain = models.CharField(max_length=253)
    token = models.CharField(max_length=64)
    verified_at = models.DateTimeField(null=True, blank=True)
    verified_by = models.CharField(max_length=16, choices=DomainProof.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, null=True)  # null: claims from before proofs

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "domain"], name="sso_domain_claim_once"),
            models.UniqueConstraint(
                fields=["domain"],
                condition=models.Q(verified_at__isnull=False),
                name="sso_domain_proven_once",
            ),
        ]


class SsoIdentity(models.Model):
    """The user a provider's subject (`sub`) signs in as. A second sign-in finds the user here, by
    subject, never by email alone."""

    provider = models.ForeignKey(IdentityProvider, on_delete=models.CASCADE, related_name="identities")
    subject = models.CharField(max_length=255)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "subject"], name="sso_identity_subject")]
