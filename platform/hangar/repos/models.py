"""A session's repository workspace (what was cloned, onto which branch, how set-up went) and the pushes
made from it. The git itself lives on the host (sandbox.gitops); these rows are the record."""

from django.conf import settings
from django.db import models


class WorkspaceState(models.TextChoices):
    PENDING = "pending"
    PREPARING = "preparing"
    READY = "ready"
    FAILED = "failed"


class SessionWorkspace(models.Model):
    session = models.OneToOneField(
        "conversations.Session", on_delete=models.CASCADE, primary_key=True, related_name="workspace"
    )
    repo_url = models.CharField(max_length=500, blank=True, help_text="as cloned; empty: no repository")
    ref = models.CharField(max_length=250, blank=True, help_text="branch, tag or commit asked for")
    branch = models.CharField(max_length=250, blank=True, help_text="the session's own branch")
    base_commit = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=16, choices=WorkspaceState.choices, default=WorkspaceState.PENDING)
    error = models.JSONField(default=dict, blank=True, help_text="{kind, message} when failed")
    setup_exit_code = models.IntegerField(null=True, blank=True)
    setup_log = models.TextField(blank=True, help_text="the setup script's output (its tail when long)")
    prepare_ms = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)


class PushStatus(models.TextChoices):
    PUSHED = "pushed"
    REJECTED = "rejected"
    FAILED = "failed"


class RepoPush(models.Model):
    session = models.ForeignKey("conversations.Session", on_delete=models.CASCADE, related_name="pushes")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    branch = models.CharField(max_length=250)
    commit = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=PushStatus.choices)
    error = models.JSONField(default=dict, blank=True)
    compare_url = models.CharField(max_length=700, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]


class OperationKind(models.TextChoices):
    PUSH = "push"
    PULL = "pull"


class OperationStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class WorkspaceOperation(models.Model):
    """A push or pull asked for through the API and run by a worker (it talks to the repository's host,
    which may take minutes). `result`: {commit, branch, compare_url, push_id} or {commit, merged};
    `error`: {kind, message, status} (kind `rejected`: the remote branch moved, pull then push again)."""

    session = models.ForeignKey(
        "conversations.Session", on_delete=models.CASCADE, related_name="workspace_operations"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    kind = models.CharField(max_length=8, choices=OperationKind.choices)
    status = models.CharField(max_length=8, choices=OperationStatus.choices, default=OperationStatus.PENDING)
    params = models.JSONField(default=dict, blank=True, help_text="message, author_name, author_email")
    result = models.JSONField(default=dict, blank=True)
    error = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
