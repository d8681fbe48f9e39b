"""Writes for a project's env vars and the scopes of its secret ones. Separate from the project services
because a var is its own row with its own rules (a secret's scope, the 32 KiB bound) and every write moves
the project's policy stamp, which a running session watches (hangar.engine.turn.live_policy). Audit rows
carry a var's name and scope, never its value."""

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import ValidationError
from hangar.projects import crypto
from hangar.projects.models import Project, ProjectEnvVar
from hangar.projects.validation import clean_env_name, clean_secret_scope


def _policy_changed(project: Project) -> None:
    """Move the project's stamp: a running session compares it at its next tool call and re-reads the
    sandbox's env and limits (hangar.engine.turn.live_policy)."""
    Project.objects.filter(pk=project.pk).update(updated_at=timezone.now())


@transaction.atomic
def env_var_set(
    *, actor: Actor, project: Project, name: str, value: str, secret: bool = True, scope: dict | None = None
) -> ProjectEnvVar:
    """Create or replace one env var. Others reach the sandbox's env; a `secret` one only the processes
    its scope names (kept as it was when `scope` is None)."""
    require_role(actor, project.org_id, Role.ADMIN)
    clean_env_name(name)
    if not isinstance(value, str) or len(value) > 32768:
        raise ValidationError({"value": ["Must be a string of at most 32768 characters."]})
    current = ProjectEnvVar.objects.select_for_update().filter(project=project, name=name).first()
    if scope is None:
        scope = _scope_of(current) if current is not None and secret else {}
    cleaned = _clean_scope(scope, secret=bool(secret), value=value)
    var, created = ProjectEnvVar.objects.update_or_create(
        project=project,
        name=name,
        defaults={
            "value_encrypted": crypto.encrypt(value),
            "secret": bool(secret),
            "scope_setup": cleaned["setup"],
            "scope_commands": cleaned["commands"],
            "scope_mcp": cleaned["mcp"],
        },
    )
    _policy_changed(project)
    audit_record(
        actor=actor,
        action="project.env_set",
        target=var,
        org_id=project.org_id,
        data={
            "project": project.pk,
            "name": name,
            "secret": var.secret,
            "created": created,
            "scope": cleaned,
        },
    )
    return var


def _scope_of(var: ProjectEnvVar) -> dict:
    return {"setup": var.scope_setup, "commands": list(var.scope_commands), "mcp": list(var.scope_mcp)}


def _clean_scope(scope: dict, *, secret: bool, value: str) -> dict:
    cleaned = clean_secret_scope(scope, value=value)
    if not secret and (cleaned["setup"] or cleaned["commands"] or cleaned["mcp"]):
        raise ValidationError(
            {"scope": ["Only a secret var has a scope: the others are in every command's env."]}
        )
    return cleaned


@transaction.atomic
def env_var_scope_set(*, actor: Actor, var: ProjectEnvVar, scope: dict) -> ProjectEnvVar:
    """Change where a secret may go without sending its value again."""
    project = var.project
    require_role(actor, project.org_id, Role.ADMIN)
    var = ProjectEnvVar.objects.select_for_update().get(pk=var.pk)
    cleaned = _clean_scope(scope, secret=var.secret, value=crypto.decrypt(var.value_encrypted))
    var.scope_setup, var.scope_commands, var.scope_mcp = cleaned["setup"], cleaned["commands"], cleaned["mcp"]
    var.save(update_fields=["scope_setup", "scope_commands", "scope_mcp"])
    _policy_changed(project)
    audit_record(
        actor=actor,
        action="project.env_scope_set",
        target=var,
        org_id=project.org_id,
        data={"project": project.pk, "name": var.name, "scope": cleaned},
    )
    return var


@transaction.atomic
def env_var_delete(*, actor: Actor, var: ProjectEnvVar) -> None:
    project = var.project
    require_role(actor, project.org_id, Role.ADMIN)
    audit_record(
        actor=actor,
        action="project.env_delete",
        target=var,
        org_id=project.org_id,
        data={"project": project.pk, "name": var.name},
    )
    var.delete()
    _policy_changed(project)
