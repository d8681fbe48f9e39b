"""Writes for projects, their env vars and provider credentials. Admins and owners manage projects and org
credentials; any member may keep a personal credential. Audit rows never carry secret values or keys."""

import subprocess

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from hangar import mcp_config, netguard
from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Org, Role, User
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied, ValidationError
from hangar.projects import crypto
from hangar.projects.caps_services import check_caps, within_caps_defaults
from hangar.projects.headless import approvers_named
from hangar.projects.mcp_oauth_services import mcp_grants_rotate
from hangar.projects.models import Project, ProjectEnvVar, ProviderCredential
from hangar.projects.validation import clean_env_name, clean_project_fields, clean_secret_scope
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


def _credential_role(actor: Actor, org_id: int, user_id: int | None, *, edit: bool = False) -> None:
    """Org credentials need admin. A personal credential is its owner's alone to edit (an admin editing it
    could send its key anywhere); an admin may still delete (revoke) it."""
    own = user_id is not None and actor.user_id == user_id
    if edit and user_id is not None and not own:
        raise PermissionDenied("Only its owner edits a personal credential.")
    require_role(actor, org_id, Role.MEMBER if own else Role.ADMIN)


def _clean_credential(provider: str | None, models: list | None) -> None:
    if provider is not None and (not isinstance(provider, str) or not provider.strip() or "/" in provider):
        raise ValidationError({"provider": ["Must be a non-empty provider id without '/'."]})
    if models is not None and (
        not isinstance(models, list) or not all(isinstance(m, str) and m for m in models)
    ):
        raise ValidationError({"models": ["Must be a list of model ids."]})


@transaction.atomic
def credential_set(
    *,
    actor: Actor,
    org: Org,
    provider: str,
    api_key: str | None = None,
    api_base: str = "",
    models: list[str] | None = None,
    user: User | None = None,
) -> ProviderCredential:
    """Create or update the (org, user-or-none, provider) credential. `api_key=None` keeps the stored key,
    but only where it already goes: a new api_base needs the key in the same call, or whoever may edit the
    credential could point its key at a server of their choosing."""
    _credential_role(actor, org.pk, user.pk if user else None, edit=True)
    _clean_credential(provider, models)
    try:
        api_base = netguard.clean_api_base(api_base or "")
    except ValueError as exc:
        raise ValidationError({"api_base": [str(exc)]}) from None
    if user is not None and not user.memberships.filter(org=org).exists():
        raise PermissionDenied("A personal credential belongs to a member of this org.")
    credential = (
        ProviderCredential.objects.select_for_update().filter(org=org, user=user, provider=provider).first()
    )
    created = credential is None
    if (
        credential is not None
        and api_key is None
        and api_base != credential.api_base
        and credential.api_key_encrypted
    ):
        raise ValidationError({"api_key": ["Changing api_base needs the key in the same request."]})
    credential = credential or ProviderCredential(org=org, user=user, provider=provider)
    credential.api_base = api_base
    if models is not None:
        credential.models_list = models
    if api_key is not None:
        credential.api_key_encrypted = crypto.encrypt(api_key) if api_key else ""
        credential.api_key_hint = crypto.mask(api_key) if api_key else ""
    try:
        with transaction.atomic():
            credential.save()
    except IntegrityError as exc:
        raise ValidationError({"provider": ["A credential for this provider already exists."]}) from exc
    audit_record(
        actor=actor,
        action="credential.set",
        target=credential,
        org_id=org.pk,
        data={
            "provider": provider,
            "user": user.email if user else None,
            "created": created,
            "api_base": credential.api_base,
            "key_changed": api_key is not None,
        },
    )
    return credential


@transaction.atomic
def credential_delete(*, actor: Actor, credential: ProviderCredential) -> None:
    _credential_role(actor, credential.org_id, credential.user_id)
    audit_record(
        actor=actor,
        action="credential.delete",
        target=credential,
        data={"provider": credential.provider, "user_id": credential.user_id},
    )
    credential.delete()


@transaction.atomic
def encryption_keys_rotate(*, actor: Actor) -> dict:
    """Re-encrypt every stored secret under the first key, so older keys can then be retired."""
    counts = {"credentials": 0, "env_vars": 0, "repo_tokens": 0, "repo_ssh_keys": 0}
    for credential in ProviderCredential.objects.select_for_update().exclude(api_key_encrypted=""):
        credential.api_key_encrypted = crypto.rotate(credential.api_key_encrypted)
        credential.save(update_fields=["api_key_encrypted"])
        counts["credentials"] += 1
    for var in ProjectEnvVar.objects.select_for_update():
        var.value_encrypted = crypto.rotate(var.value_encrypted)
        var.save(update_fields=["value_encrypted"])
        counts["env_vars"] += 1
    for project in Project.objects.select_for_update().exclude(repo_token_encrypted=""):
        project.repo_token_encrypted = crypto.rotate(project.repo_token_encrypted)
        project.save(update_fields=["repo_token_encrypted"])
        counts["repo_tokens"] += 1
    for project in Project.objects.select_for_update().exclude(repo_ssh_key_encrypted=""):
        project.repo_ssh_key_encrypted = crypto.rotate(project.repo_ssh_key_encrypted)
        project.save(update_fields=["repo_ssh_key_encrypted"])
        counts["repo_ssh_keys"] += 1
    counts["mcp_oauth_grants"] = mcp_grants_rotate()
    audit_record(actor=actor, action="encryption_keys.rotate", data=counts, org_id=None)
    return counts


def credentials_revoke_for_leaving_member(*, org_id: int, user_id: int, **_signal) -> int:
    """A member leaving an org takes their personal provider keys for it with them (called inside
    member_remove's transaction through accounts.signals.member_leaving). Returns how many went."""
    return ProviderCredential.objects.filter(org_id=org_id, user_id=user_id).delete()[0]
