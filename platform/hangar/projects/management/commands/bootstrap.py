"""`manage.py bootstrap --json`: the scripted first run. Idempotently finds or creates an org, its owner
(staff, so they can use /admin) and a project, optionally an OpenAI-compatible model credential, and
issues a NEW API token every run (tokens are never shown twice). Prints one JSON object."""

import json
import os
import secrets

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.accounts.selectors import org_by_slug
from hangar.accounts.services import member_ensure, org_create, user_ensure_staff
from hangar.accounts.token_services import token_create
from hangar.audit.models import ActorType
from hangar.projects.credential_services import credential_set
from hangar.projects.selectors import project_by_slug
from hangar.projects.services import project_create, project_update

LOCAL_PROVIDER = "local"  # the provider id an --api-base endpoint is stored under


class Command(BaseCommand):
    help = "Create or find an org, owner, project (and model credential); print a fresh API token."

    def add_arguments(self, parser):
        env = os.environ.get
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--email", default=env("HANGAR_BOOTSTRAP_EMAIL", "admin@hangar.local"))
        parser.add_argument(
            "--password",
            default=env("HANGAR_BOOTSTRAP_PASSWORD"),
            help="used only when the user is created (default: generated)",
        )
        parser.add_argument("--org", default=env("HANGAR_BOOTSTRAP_ORG", "demo"), help="org slug")
        parser.add_argument("--project", default=env("HANGAR_BOOTSTRAP_PROJECT", "demo"), help="project slug")
        parser.add_argument(
            "--api-base",
            default=env("HANGAR_BOOTSTRAP_API_BASE"),
            help="an OpenAI-compatible endpoint, stored as provider 'local'",
        )
        parser.add_argument("--model", default=env("HANGAR_BOOTSTRAP_MODEL"))
        parser.add_argument("--api-key", default=env("HANGAR_BOOTSTRAP_API_KEY"))
        parser.add_argument("--url", default=None, help="public URL (default: settings.PUBLIC_URL)")
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="give an existing user a new generated password (printed once, like the first one)",
        )

    def handle(self, *args, **opts):
        with transaction.atomic():
            result = self.bootstrap(opts)
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>13}: {value}")

    def bootstrap(self, opts) -> dict:
        email = opts["email"].strip().lower()
        system = Actor(type=ActorType.SYSTEM, org_id=None, label="bootstrap")
        password = opts["password"] or secrets.token_urlsafe(12)
        reset = bool(opts.get("reset_password"))
        user, created = user_ensure_staff(actor=system, email=email, password=password, reset_password=reset)
        if not (created or reset):
            password = None  # shown only when this run set it
        org = org_by_slug(opts["org"])
        if org is None:
            org = org_create(actor=system, name=opts["org"], slug=opts["org"], owner=user)
        # Acting as the owner, so the role checks in the services apply as they would to a person.
        actor = Actor(type=ActorType.SYSTEM, org_id=org.pk, user=user, label="bootstrap")
        member_ensure(actor=actor, org=org, user=user, role=Role.OWNER)

        project = project_by_slug(org=org, slug=opts["project"])
        if project is None:
            project = project_create(actor=actor, org=org, name=opts["project"], slug=opts["project"])
        model = opts["model"]
        if opts["api_base"]:
            credential_set(
                actor=actor,
                org=org,
                provider=LOCAL_PROVIDER,
                api_base=opts["api_base"].rstrip("/"),
                models=[model] if model else None,
                api_key=opts["api_key"],
            )
            if model:
                project = project_update(
                    actor=actor, project=project, default_model=f"{LOCAL_PROVIDER}/{model}"
                )
        elif model:
            project = project_update(actor=actor, project=project, default_model=model)

        _token, raw = token_create(
            actor=actor, org=org, user=user, name=f"bootstrap {timezone.now():%Y-%m-%d %H:%M:%S}"
        )
        url = (opts["url"] or settings.PUBLIC_URL).rstrip("/")
        return {
            "url": url,
            "admin_url": f"{url}/admin/",
            "org": org.slug,
            "project": project.slug,
            "project_id": project.pk,
            "email": email,
            "password": password,
            "token": raw,
            "default_model": project.default_model,
            "opencode_url": f"{url}/oc/{project.pk}",
        }
