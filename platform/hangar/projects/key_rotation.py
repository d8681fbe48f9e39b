"""Re-encrypting every stored secret (provider keys, env vars, repository tokens and SSH keys, MCP OAuth
grants) under the first of settings.ENCRYPTION_KEYS, so older keys can be retired. Separate because it
spans every table that holds a secret rather than owning one of them (the `rotate_encryption_keys`
command calls it)."""

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.projects import crypto
from hangar.projects.mcp_oauth_services import mcp_grants_rotate
from hangar.projects.models import Project, ProjectEnvVar, ProviderCredential


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
