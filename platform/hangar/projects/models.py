"""Projects (a workspace, its defaults, env, permission ruleset and sandbox limits) and the
provider credentials the worker uses to reach a model."""

from django.conf import settings
from django.db import models

from hangar.accounts.models import Org
from hangar.projects.labels import validate_sandbox_labels


class NetworkPolicy(models.TextChoices):
    NONE = "none"
    ALLOWLIST = "allowlist"


class Project(models.Model):
    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=150)
    slug = models.SlugField(max_length=80)
    default_agent = models.CharField(max_length=64, default="build")
    default_model = models.CharField(max_length=200, blank=True, help_text="providerID/modelID")
    setup_script = models.TextField(blank=True)
    permission_rules = models.JSONField(default=list, blank=True, help_text="[{permission, pattern, action}]")
    # What an `ask` becomes, by what started the run (web, api, slack, webhook, codehost, schedule): ask,
    # reject, route to approvers, or allow-listed (hangar.projects.headless; applied by hangar.engine.agents.headless).
    headless_policy = models.JSONField(default=dict, blank=True)
    sandbox_image = models.CharField(max_length=200, blank=True)
    sandbox_cpus = models.FloatField(default=1.0)
    sandbox_memory_mb = models.PositiveIntegerField(default=1024)
    sandbox_pids = models.PositiveIntegerField(default=256)
    sandbox_disk_mb = models.PositiveIntegerField(default=2048)
    # Labels a sandbox host must all carry to hold this project's sandboxes (e.g. ["gpu"]): placement's.
    sandbox_labels = models.JSONField(default=list, blank=True, validators=[validate_sandbox_labels])
    command_timeout_s = models.PositiveIntegerField(default=600)
    network_policy = models.CharField(
        max_length=16, choices=NetworkPolicy.choices, default=NetworkPolicy.NONE
    )
    network_allowlist = models.JSONField(default=list, blank=True)
    # Hosts open while the setup script runs and closed after it (package registries, say): the sandbox is on
    # an allowlist network of these (and the allowlist above, under that policy) for the script only.
    setup_network_allowlist = models.JSONField(default=list, blank=True)
    # Per-model context limits that win over LiteLLM's map (hangar.engine.providers.catalogue), e.g. a
    # self-hosted model LiteLLM does not know: {"provider/model": {"context": N, "output": N, "input": N?}}.
    model_limits = models.JSONField(default=dict, blank=True)
    # Agents the team defines for every session of the project: {"name": {description, mode, prompt,
    # permission, steps, temperature, model, ...}} as in a workspace's .opencode/agents/*.md frontmatter
    # (hangar.agent_config). A built-in agent's name wins; these win over the workspace's.
    agents = models.JSONField(default=dict, blank=True)
    # MCP servers its sessions get, in OpenCode's shape ({name: {type: local|remote, ...}}, checked by
    # hangar.mcp_config); each must pass the org's allow-list (Org.mcp_policy), when saved and when used.
    mcp = models.JSONField(default=dict, blank=True)
    # The repository a session's workspace is cloned from (hangar.repos); empty: sessions start empty.
    repo_url = models.CharField(max_length=500, blank=True)
    repo_default_branch = models.CharField(max_length=250, blank=True, help_text="empty: the remote's HEAD")
    # Branches only an org admin may push to (fnmatch patterns, e.g. "release/*"), besides the repository's
    # default branch, which always is (hangar.engine.repo_ops: a member's push there is a 403).
    protected_branches = models.JSONField(default=list, blank=True)
    repo_username = models.CharField(max_length=100, blank=True)
    # The token is encrypted like provider keys and only ever decrypted by host-side git (never a sandbox).
    repo_token_encrypted = models.TextField(blank=True)
    repo_token_hint = models.CharField(max_length=16, blank=True)
    # For ssh:// and user@host:path URLs: a deploy key (encrypted like the token; its public half shown so
    # it can be added to the host) and the host's public key, pinned when the URL is saved.
    repo_ssh_key_encrypted = models.TextField(blank=True)
    repo_ssh_public_key = models.CharField(max_length=1000, blank=True)
    repo_ssh_host_key = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "slug"], name="uniq_project_slug")]

    def __str__(self) -> str:
        return f"{self.org.slug}/{self.slug}"


class ProjectEnvVar(models.Model):
    """A project environment variable. Non-secret ones are the sandbox's env. A secret one is never returned
    by the API and reaches only the processes its scope names, in that process's own env (never the
    container's, never a file): the setup script (`scope_setup`), a bash command every simple command of
    which matches one of `scope_commands` (bash permission patterns, hangar.engine.agents.secret_env), or the MCP
    servers named in `scope_mcp`. With no scope it reaches nothing. Its value is masked in all output."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="env_vars")
    name = models.CharField(max_length=128)
    value_encrypted = models.TextField()
    secret = models.BooleanField(default=True)
    scope_setup = models.BooleanField(default=False)
    scope_commands = models.JSONField(default=list, blank=True)
    scope_mcp = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="uniq_project_env")]


class ProviderCredential(models.Model):
    """An LLM provider key for an org, or for one user in it (the user's wins). The key is encrypted
    at rest with MultiFernet and never leaves the worker."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="credentials")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True)
    provider = models.CharField(max_length=64, help_text="providerID, e.g. openai, anthropic, local")
    models_list = models.JSONField(default=list, blank=True)
    api_base = models.URLField(max_length=500, blank=True)
    api_key_encrypted = models.TextField(blank=True)
    # Last characters of the key, kept at write time so listing never needs to decrypt.
    api_key_hint = models.CharField(max_length=16, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org", "user", "provider"], name="uniq_credential"),
            models.UniqueConstraint(
                fields=["org", "provider"], condition=models.Q(user__isnull=True), name="uniq_org_credential"
            ),
        ]


class McpOAuthGrant(models.Model):
    """One member's OAuth grant for one remote MCP server of a project (hangar.engine.mcp.oauth): the tokens,
    the client registration they were issued to and the authorization server's endpoints, as one JSON
    document encrypted like the project's secrets. Only the worker decrypts it to call the server, and the
    web process to finish, refresh or revoke it; it never reaches a sandbox, an event or a log line. Bound to
    the server's URL when granted: a server moved elsewhere needs a new grant."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="mcp_oauth_grants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.CharField(max_length=64)
    url = models.CharField(max_length=2000)
    grant_encrypted = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user", "server"], name="uniq_mcp_oauth_grant")
        ]
