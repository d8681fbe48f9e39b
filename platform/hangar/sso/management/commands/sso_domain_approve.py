"""The platform operator's approval of an org's claim to an email domain, for an org that cannot publish a
DNS TXT record: `manage.py sso_domain_approve ORG_SLUG DOMAIN`. Refused when another org has it proven."""

from django.core.management.base import BaseCommand, CommandError

from hangar.accounts.actors import system_actor
from hangar.accounts.selectors import org_by_slug
from hangar.errors import NotFound, ValidationError
from hangar.sso.domain_services import sso_domain_approve


class Command(BaseCommand):
    help = "Approve an organisation's claim to an email domain for single sign-on."

    def add_arguments(self, parser):
        parser.add_argument("org", help="the org's slug")
        parser.add_argument("domain", help="a domain the org's identity provider claims")

    def handle(self, *args, **opts):
        org = org_by_slug(opts["org"])
        if org is None:
            raise CommandError(f"no org {opts['org']!r}")
        try:
            claim = sso_domain_approve(
                actor=system_actor(org.pk, "sso_domain_approve"), org=org, domain=opts["domain"]
            )
        except NotFound:
            raise CommandError(f"{org.slug} does not claim {opts['domain']!r}") from None
        except ValidationError as exc:
            raise CommandError(f"{opts['domain']}: {exc.detail}") from None
        self.stdout.write(f"{org.slug}: {claim.domain} proven ({claim.verified_by})")
