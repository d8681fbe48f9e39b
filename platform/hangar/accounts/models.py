"""Identity and tenancy: users (email login), organizations, role memberships, API tokens."""

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.utils import timezone


class UserManager(BaseUserManager["User"]):
    def create_user(self, email: str, password: str | None = None, **extra):
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=150, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()
    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"

    def __str__(self) -> str:
        return self.email


class Org(models.Model):
    name = models.CharField(max_length=150)
    slug = models.SlugField(max_length=80, unique=True)
    # Org-wide permission rules: a layer of the merge and a floor under the layers below it (an org deny
    # wins everywhere, an org ask cannot be loosened; hangar.engine.agents.permissions). [{permission, pattern, action}]
    permission_policy = models.JSONField(default=list, blank=True)
    # Which MCP servers the org's agents may use at all (hangar.mcp_config.clean_policy): {"local": [command
    # patterns], "remote": [URL patterns]}. Empty: none.
    mcp_policy = models.JSONField(default=dict, blank=True)
    # Fair shares of the shared workers and hosts (hangar.engine.run.fairness), set by a platform operator
    # (superuser admin or `manage.py org_limits`), never by the org's own admins. None: the platform's
    # default (settings.HANGAR_ORG_MAX_RUNS / HANGAR_ORG_MAX_SANDBOXES).
    max_concurrent_runs = models.PositiveIntegerField(null=True, blank=True)
    max_live_sandboxes = models.PositiveIntegerField(null=True, blank=True)
    # How long the audit log keeps this org's rows; a scheduled purge (hangar.schedule) removes older ones.
    audit_retention_days = models.PositiveIntegerField(default=180)
    # What the org's admins let a project set (hangar.projects.caps_services): {"sandbox_cpus": max,
    # "sandbox_memory_mb": max, "sandbox_disk_mb": max, "network_policies": [allowed modes]}; absent: no cap.
    project_caps = models.JSONField(default=dict, blank=True)
    # The org's own instructions to the agent in every session (the hosted counterpart of OpenCode's
    # global ~/.config/opencode/AGENTS.md), after the workspace's AGENTS.md files (hangar.engine.turn.system_context).
    instructions = models.TextField(blank=True, default="")
    # Who may open a session's share link (OpenCode's /share; hangar.conversations.share_services):
    # nobody (sharing is off), the org's members, or anyone holding the link. Set by the org's admins.
    share_policy = models.CharField(
        max_length=8,
        choices=[("off", "off"), ("members", "members"), ("link", "link")],
        default="members",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Moves with every save: a running session compares it to notice a changed org policy (M11).
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"
    # Reads the audit log and usage (hangar.accounts.selectors.check_reader) and nothing else.
    AUDITOR = "auditor"


# Higher rank may do everything a lower rank may. The auditor ranks below every role: no role check lets
# it through; only the audit and usage reads admit it by name.
ROLE_RANK = {Role.AUDITOR: -1, Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2, Role.OWNER: 3}


class Membership(models.Model):
    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    # The member layer of the permission merge (hangar.engine.agents.permissions.merge): the person's own rules,
    # applied to the runs they start or prompt, and only ever narrowing. [{permission, pattern, action}]
    permission_rules = models.JSONField(default=list, blank=True)
    # The member's own OpenCode settings (its global config, `GET/PATCH /global/config`): the few keys
    # that are a person's preference, not the project's policy (hangar.accounts.member_config_services).
    opencode_config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "user"], name="uniq_membership")]

    def has_role(self, at_least: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(at_least)]


class ApiToken(models.Model):
    """A bearer token. Only an HMAC digest is stored; `prefix` (shown in lists) identifies it to people."""

    # Set by the token lookup (token_rows.token_find): the user's membership in the token's org, or None.
    membership: "Membership | None"

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="tokens")
    # The token that minted this one (None: minted by a signed-in person). Revoking a token revokes every
    # token minted through it, so a leaked token cannot outlive its revocation through its children.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=24, db_index=True)
    digest = models.CharField(max_length=128, unique=True)
    pepper_index = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def is_usable(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class Invitation(models.Model):
    """An invitation by link to join an org with a role. Only a SHA-256 digest of the link's secret is
    stored; the link works once (`accepted_at`), until `expires_at`, unless revoked."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    digest = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["org", "-created_at"], name="accounts_invitation_org")]

    def state(self, now=None) -> str:
        """pending | accepted | revoked | expired."""
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= (now or timezone.now()) else "pending"
