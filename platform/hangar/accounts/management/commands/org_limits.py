"""The platform operator's way to set an org's fair shares (concurrent runs, live sandboxes); the org's own
admins cannot. `manage.py org_limits ORG_SLUG --runs 8 --sandboxes 16`; `--runs default` puts the
platform's default back; without options, prints the org's limits."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from hangar.accounts.actors import system_actor
from hangar.accounts.org_policy_services import org_limits_set
from hangar.accounts.selectors import org_by_slug


def _limit(value: str) -> int | None:
    if value == "default":
        return None
    try:
        number = int(value)
    except ValueError:
        raise CommandError(f"{value!r}: a positive integer or 'default'") from None
    if number < 1:
        raise CommandError(f"{value!r}: a positive integer or 'default'")
    return number


class Command(BaseCommand):
    help = "Show or set an organisation's caps on concurrent runs and live sandboxes."

    def add_arguments(self, parser):
        parser.add_argument("org", help="the org's slug")
        parser.add_argument("--runs", type=_limit, default=..., help="max concurrent runs, or 'default'")
        parser.add_argument("--sandboxes", type=_limit, default=..., help="max live sandboxes, or 'default'")

    def handle(self, *args, **opts):
        org = org_by_slug(opts["org"])
        if org is None:
            raise CommandError(f"no org {opts['org']!r}")
        runs, sandboxes = opts["runs"], opts["sandboxes"]
        if runs is not ... or sandboxes is not ...:
            org = org_limits_set(
                actor=system_actor(org.pk, "org_limits"),
                org=org,
                max_concurrent_runs=org.max_concurrent_runs if runs is ... else runs,
                max_live_sandboxes=org.max_live_sandboxes if sandboxes is ... else sandboxes,
            )
        default_runs, default_boxes = settings.HANGAR_ORG_MAX_RUNS, settings.HANGAR_ORG_MAX_SANDBOXES
        self.stdout.write(
            f"{org.slug}: runs {org.max_concurrent_runs or f'{default_runs} (default)'}, "
            f"sandboxes {org.max_live_sandboxes or f'{default_boxes} (default)'}"
        )
