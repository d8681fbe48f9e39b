"""Writes for projects: create, update (settings, repository URL, token, SSH key and host key, MCP servers,
approvers, caps) and delete. Admins and owners manage projects. Env vars are env_var_services', provider
credentials credential_services', re-encryption key_rotation's. Audit rows never carry secret values."""

import subprocess

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from hangar import mcp_config
from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import ValidationError
from hangar.projects import crypto
from hangar.projects.caps_services import check_caps, within_caps_defaults
from hangar.projects.headless import approvers_named
from hangar.projects.models import Project
from hangar.projects.validation import clean_project_fields
from sandbox import gitops, gitssh

PROJECT_FIELDS = (
    "name",
    "slug",
    "default_agent",
    "default_model",
    "setup_script",
    "permission_rules",
    "headless_policy",
    "sandbox_image",
    "sandbox_cpus",
    "sandbox_memory_mb",
    "sandbox_pids",
    "sandbox_disk_mb",
    "command_timeout_s",
    "network_policy",
    "network_allowlist",
    "setup_network_allowlist",
    "model_limits",
    "agents",
    "mcp",
    "repo_url",
    "repo_default_branch",
    "repo_username",
    "protected_branches",
)


def _apply_token(project: Project, token: str | None) -> bool:
    """Write-only: None keeps the stored token, "" clears it. True if it changed."""
    if token is None:
        return False
    if not isinstance(token, str) or len(token) > 4096 or any(c in token for c in "\r\n"):
        raise ValidationError({"repo_token": ["Must be a single-line string of at most 4096 characters."]})
    project.repo_token_encrypted = crypto.encrypt(token) if token else ""
    project.repo_token_hint = crypto.mask(token) if token else ""
    return True


def _apply_ssh_key(project: Project, key: str | None) -> bool:
    """Write-only like the token: None keeps it, "" clears it, "generate" makes a new ed25519 pair (its
    public half is then shown, to be added to the repository as a deploy key). True if it changed."""
    if key is None:
        return False
    if key == "":
        private, public = "", ""
    elif key == "generate":
        private, public = gitssh.generate(f"hangar deploy key ({project.slug})")
    else:
        try:
            private, public = key, gitssh.public_key(key)
        except ValueError as exc:
            raise ValidationError({"repo_ssh_key": [str(exc)]}) from None
    project.repo_ssh_key_encrypted = crypto.encrypt(private) if private else ""
    project.repo_ssh_public_key = public
    return True


def _repo_host(url: str) -> tuple[str, int] | None:
    try:
        return gitops.parse_url(url, allow_private=True) if url else None
    except gitops.GitError:
        return None


def _credentials_follow_no_new_host(
    project: Project, values: dict, token: str | None, key: str | None
) -> None:
    """A stored credential never follows the repository URL to another host: an admin could otherwise send
    a token or deploy key someone else set to a server of their choosing. Moving the host needs the
    credential again in the same request ("" to drop it)."""
    if "repo_url" not in values or _repo_host(values["repo_url"]) == _repo_host(project.repo_url):
        return
    missing = {}
    if project.repo_token_encrypted and token is None:
        missing["repo_token"] = [
            'The repository moves to another host: give the token again, or "" to drop it.'
        ]
    if project.repo_ssh_key_encrypted and key is None:
        missing["repo_ssh_key"] = [
            'The repository moves to another host: give the deploy key again, "generate", or "" to drop it.'
        ]
    if missing:
        raise ValidationError(missing)


def _pin_host_key(project: Project, given: str | None, host_moved: bool) -> bool:
    """An SSH repository's host key, pinned: the one given, else read from the host (at its checked
    address) when the URL names a new host or none is pinned yet. True if it changed."""
    before = project.repo_ssh_host_key
    try:
        given = gitssh.normalised_public_key(given) if given else given
    except ValueError as exc:
        raise ValidationError({"repo_ssh_host_key": [str(exc)]}) from None
    if not gitops.is_ssh_url(project.repo_url):
        project.repo_ssh_host_key = ""
    elif given:
        project.repo_ssh_host_key = given
    elif given == "" or host_moved or not before:
        remote = gitops.check_url(project.repo_url, allow_private=settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS)
        try:
            project.repo_ssh_host_key = gitssh.scan_host_key(remote.addresses[0], remote.port)
        except (ValueError, OSError, subprocess.SubprocessError) as exc:
            raise ValidationError(
                {"repo_ssh_host_key": [f"{exc} Give the host's public key (ssh-keyscan prints it)."]}
            ) from None
    return project.repo_ssh_host_key != before


def check_mcp_allowed(org_id: int, values: dict) -> None:
    """Every MCP server a project names must pass its org's allow-list (a 400 naming the server's
    command or url); the engine checks again at use, since the org may narrow the list later."""
    if not values.get("mcp"):
        return
    policy = Org.objects.filter(pk=org_id).values_list("mcp_policy", flat=True).first() or {}
    try:
        mcp_config.check_allowed(values["mcp"], policy)
    except mcp_config.McpConfigError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None


def _check_fields(values: dict) -> dict:
    unknown = set(values) - set(PROJECT_FIELDS)
    if unknown:
        raise ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
    return clean_project_fields(values)


def _approvers_are_members(org_id: int, values: dict) -> None:
    """A headless policy's approvers are members of the org who may answer an ask (member role or more);
    a 400 names the trigger whose list holds a stranger (no telling whether that user exists)."""
    policy = values.get("headless_policy")
    if not policy:
        return
    able = {Role.MEMBER, Role.ADMIN, Role.OWNER}
    members = set(
        Membership.objects.filter(
            org_id=org_id, user_id__in=approvers_named(policy), role__in=able
        ).values_list("user_id", flat=True)
    )
    for trigger, entry in policy.items():
        strangers = [a for a in entry.get("approvers", []) if a not in members]
        if strangers:
            raise ValidationError(
                {
                    f"headless_policy.{trigger}.approvers": [
                        f"User {strangers[0]} is not a member who may answer."
                    ]
                }
            )


@transaction.atomic
def project_create(
    *,
    actor: Actor,
    org: Org,
    name: str,
    repo_token: str | None = None,
    repo_ssh_key: str | None = None,
    repo_ssh_host_key: str | None = None,
    **fields,
) -> Project:
    require_role(actor, org.pk, Role.ADMIN)
    values = _check_fields({"name": name, **fields})
    _approvers_are_members(org.pk, values)
    caps = Org.objects.filter(pk=org.pk).values_list("project_caps", flat=True).first() or {}
    check_caps(caps, values)
    check_mcp_allowed(org.pk, values)
    values = within_caps_defaults(caps, values)
    values["slug"] = values.get("slug") or slugify(name)[:80]
    if not values["slug"]:
        raise ValidationError({"slug": ["A slug is required."]})
    if Project.objects.filter(org=org, slug=values["slug"]).exists():
        raise ValidationError({"slug": ["A project with this slug already exists in this org."]})
    project = Project(org=org, **values)
    _apply_token(project, repo_token)
    _apply_ssh_key(project, repo_ssh_key)
    _pin_host_key(project, repo_ssh_host_key, host_moved=True)
    project.save(force_insert=True)
    audit_record(
        actor=actor,
        action="project.create",
        target=project,
        org_id=org.pk,
        data={"slug": project.slug, "name": project.name},
    )
    return project


@transaction.atomic
def project_update(
    *,
    actor: Actor,
    project: Project,
    repo_token: str | None = None,
    repo_ssh_key: str | None = None,
    repo_ssh_host_key: str | None = None,
    **fields,
) -> Project:
    require_role(actor, project.org_id, Role.ADMIN)
    values = _check_fields(fields)
    _approvers_are_members(project.org_id, values)
    check_caps(
        Org.objects.filter(pk=project.org_id).values_list("project_caps", flat=True).first() or {}, values
    )
    check_mcp_allowed(project.org_id, values)
    if (
        values.get("slug")
        and Project.objects.filter(org_id=project.org_id, slug=values["slug"]).exclude(pk=project.pk).exists()
    ):
        raise ValidationError({"slug": ["A project with this slug already exists in this org."]})
    project = Project.objects.select_for_update().get(pk=project.pk)
    _credentials_follow_no_new_host(project, values, repo_token, repo_ssh_key)
    host_moved = "repo_url" in values and _repo_host(values["repo_url"]) != _repo_host(project.repo_url)
    changed = {}
    for name, value in values.items():
        if getattr(project, name) != value:
            changed[name] = value
            setattr(project, name, value)
    if _apply_token(project, repo_token):
        changed |= {"repo_token_encrypted": True, "repo_token_hint": True}
    if _apply_ssh_key(project, repo_ssh_key):
        changed |= {"repo_ssh_key_encrypted": True, "repo_ssh_public_key": True}
    if _pin_host_key(project, repo_ssh_host_key, host_moved):
        changed["repo_ssh_host_key"] = True
    if changed:
        project.save(update_fields=[*changed, "updated_at"])
        # Setup scripts may hold anything: record which fields changed, not the script itself.
        audit_record(actor=actor, action="project.update", target=project, data={"fields": sorted(changed)})
    return project


@transaction.atomic
def project_delete(*, actor: Actor, project: Project) -> None:
    require_role(actor, project.org_id, Role.ADMIN)
    audit_record(actor=actor, action="project.delete", target=project, data={"slug": project.slug})
    project.delete()
