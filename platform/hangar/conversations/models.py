"""The conversation store, shaped like OpenCode's (seed 003 "Database Schema"): sessions, messages,
parts, todos, permission requests and a durable per-session event log.

Message and part payloads live in `data` as OpenCode's JSON shapes, validated by the pydantic models in
`hangar.conversations.schemas` on every write. Ids are OpenCode-format (hangar.ids).
"""

from django.conf import settings
from django.db import models

from hangar.ids import new_message_id, new_part_id, new_permission_id, new_question_id, new_session_id


class SessionStatus(models.TextChoices):
    IDLE = "idle"
    BUSY = "busy"
    RETRY = "retry"
    ERROR = "error"


class HostState(models.TextChoices):
    ACTIVE = "active"  # takes new sessions
    DRAINING = "draining"  # takes none; its idle sandboxes are hibernated, busy ones finish first
    DRAINED = "drained"  # draining, and nothing of it is live any more
    LOST = "lost"  # its heartbeat stopped: its busy sessions were ended


class SandboxHost(models.Model):
    """A machine whose Docker engine and sandbox root hold sessions' sandboxes (docs/scale-out.md, "The
    host registry"). Its host service registers it and heart-beats every few seconds with what placement
    reads (hangar.engine.workspace.hosts); beat marks it lost when the heartbeat stops. The operator's, not
    an org's: no tenant sees or changes it (manage.py sandbox_host, the superuser admin)."""

    name = models.CharField(primary_key=True, max_length=100)
    labels = models.JSONField(default=list, blank=True, help_text="what projects may require, e.g. gpu")
    cpus = models.FloatField(default=0.0)
    memory_mb = models.PositiveIntegerField(default=0)
    disk_mb = models.PositiveIntegerField(default=0)
    free_disk_mb = models.PositiveIntegerField(default=0)
    free_memory_mb = models.PositiveIntegerField(default=0)
    live_sandboxes = models.PositiveIntegerField(default=0)
    # {org id: live sandboxes of that org on this host}: placement spreads each org's sessions.
    org_live = models.JSONField(default=dict, blank=True)
    # {org id: MB its workspaces and repositories have written on this host}: the org disk budgets count
    # every host (sandbox.budget, hangar.engine.workspace.hosts.written_elsewhere).
    org_written_mb = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=8, choices=HostState.choices, default=HostState.ACTIVE)
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Session(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_session_id, editable=False)
    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE, related_name="sessions")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="sessions")
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # Whose personal provider credential the run spends: the last person to prompt (None: the org's).
    prompter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    title = models.CharField(max_length=200, blank=True)
    # Where the session was started from (slack, webhook, api: an API token or an OpenCode client; a child
    # has its root's; empty: the web app). The headless ask policy is chosen by it (hangar.engine.agents.headless).
    # Integrations read it from the row they already hold when events are published: no query per step.
    source = models.CharField(max_length=16, blank=True, default="")
    slug = models.CharField(max_length=100, blank=True)
    agent = models.CharField(max_length=64, default="build")
    model = models.JSONField(default=dict, blank=True, help_text='{"providerID": ..., "modelID": ...}')
    status = models.CharField(max_length=8, choices=SessionStatus.choices, default=SessionStatus.IDLE)
    status_detail = models.JSONField(default=dict, blank=True, help_text="retry attempt/next, or error")
    revert = models.JSONField(null=True, blank=True)
    summary = models.JSONField(null=True, blank=True, help_text="diff summary {additions, deletions, files}")
    permission = models.JSONField(default=list, blank=True, help_text="session-layer ruleset")
    share = models.JSONField(null=True, blank=True)
    cost = models.FloatField(default=0.0)
    tokens = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    compacting_at = models.DateTimeField(null=True, blank=True)
    # Last event sequence number handed out; incremented under the row lock by publish().
    event_seq = models.BigIntegerField(default=0)
    # Every event with seq <= this was deleted by the retention purge (conversations.retention_services): a
    # reader asking for events after an earlier seq is told so rather than handed a gap.
    events_purged_seq = models.BigIntegerField(default=0)
    # Run ownership (hangar.engine.run.leases): one runner per session across all workers.
    run_requested = models.BooleanField(default=False, help_text="work is waiting for a runner")
    lease_owner = models.CharField(max_length=100, blank=True)
    # Not indexed: the lease keeper renews it for every running session, and an index on it made each
    # renewal a new entry in every index of the row (no HOT update). Expired leases are found among the
    # leased rows (session_leased_idx).
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    abort_requested = models.BooleanField(default=False)
    # Runs taken over from a runner whose lease expired (it died or stalled), since a run last released
    # the lease: a run that keeps taking its worker down is ended at the crash budget (engine.crash_budget).
    run_takeovers = models.PositiveSmallIntegerField(default=0)
    # The sandbox host holding the session's sandbox and workspace (SandboxHost; docs/scale-out.md), set
    # when the engine creates or claims it (hangar.engine.workspace.hosts). Null: none yet.
    sandbox_host = models.ForeignKey(
        "SandboxHost",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sessions",
        db_index=False,
    )

    class Meta:
        ordering = ["id"]  # descending ids: newest first
        indexes = [
            models.Index(fields=["org", "project", "archived_at"]),
            # The runs an org has waiting for a slot (hangar.engine.run.fairness): few rows, read at every release.
            models.Index(
                fields=["org", "updated_at"],
                condition=models.Q(run_requested=True),
                name="session_waiting_idx",
            ),
            # The runs an org holds now (hangar.engine.run.fairness counts them as a run starts).
            models.Index(fields=["org"], condition=~models.Q(lease_owner=""), name="session_leased_idx"),
            # The sessions of a host (a lost host's busy ones, a draining host's idle ones): a plain btree.
            models.Index(fields=["sandbox_host"], name="session_host_idx"),
        ]


# Every agent step inserts or updates message, part and event rows, and Postgres maintains every index of
# a row it writes. A varchar foreign key with db_index gets a second, `varchar_pattern_ops` index for LIKE
# queries, which nothing here makes: these keys are indexed in Meta instead (a plain btree, no twin), and
# migration 0002 drops the primary keys' twins too. The event log's session key needs no index of its own:
# uniq_event_seq (session, seq) leads with it.


class Message(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_message_id, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages", db_index=False)
    role = models.CharField(max_length=16, choices=[("user", "user"), ("assistant", "assistant")])
    data = models.JSONField(help_text="OpenCode UserMessage/AssistantMessage")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session"], name="message_session_idx")]


class Part(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_part_id, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="parts", db_index=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="parts", db_index=False)
    type = models.CharField(max_length=24)
    data = models.JSONField(help_text="OpenCode Part, discriminated on type")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["session"], name="part_session_idx"),
            models.Index(fields=["message"], name="part_message_idx"),
        ]


class ContextEpoch(models.Model):
    """A span of a session's history sent with one baseline system context (seed 001 "Context Epoch"):
    the exact system texts, reused verbatim on every provider turn of the span (so provider prompt caches
    hit, across worker restarts too), the context sources' values as last admitted, and the
    mid-conversation system messages that told the model of a source's change. A new epoch starts after a
    completed compaction, a revert that removed what an update followed, or a change of base prompt."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="context_epochs")
    number = models.PositiveIntegerField()
    boundary = models.CharField(max_length=40, help_text="first message of the history it was started for")
    base = models.CharField(max_length=64, help_text="sha256 of the base prompt it was started with")
    baseline = models.JSONField(help_text="the system texts, exactly as sent")
    snapshot = models.JSONField(default=dict, help_text="context source key → value last admitted")
    updates = models.JSONField(default=list, help_text='[{"after": message id, "text", "time"}]')
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["session", "number"], name="context_epoch_number")]


class Todo(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="todos")
    position = models.PositiveIntegerField()
    content = models.TextField()
    status = models.CharField(max_length=16, default="pending")
    priority = models.CharField(max_length=8, default="medium")

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["session", "position"], name="uniq_todo_position")]


class PermissionRequest(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_permission_id, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="permission_requests")
    permission = models.CharField(max_length=64)
    patterns = models.JSONField(default=list)
    always = models.JSONField(default=list, help_text="patterns an 'always' reply would grant")
    metadata = models.JSONField(default=dict, blank=True)
    message_id = models.CharField(max_length=40, blank=True)
    call_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, default="pending")  # pending | once | always | reject
    reply_message = models.TextField(blank=True)
    # The headless ask policy (hangar.projects.headless): who may answer ([]: anyone who may answer the
    # session; else these users and org admins) and when an unanswered request becomes a reject (None: never).
    approvers = models.JSONField(default=list, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    replied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            # The expiry sweep (hangar.engine.agents.headless): the few pending requests that can expire.
            models.Index(
                fields=["expires_at"],
                condition=models.Q(status="pending", expires_at__isnull=False),
                name="permission_expiring_idx",
            ),
        ]


class QuestionRequest(models.Model):
    """The `question` tool's questions to a person (OpenCode's QuestionRequest). Like a permission request
    it parks the run; the reply (answers, one list of chosen labels per question) or the rejection
    re-enqueues it, and the waiting call finds this row by its call id."""

    id = models.CharField(primary_key=True, max_length=40, default=new_question_id, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="question_requests")
    questions = models.JSONField()
    message_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=200)
    status = models.CharField(max_length=16, default="pending")  # pending | answered | rejected
    answers = models.JSONField(null=True, blank=True)
    replied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    replied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "call_id"], name="one_question_per_call"),
        ]


class GrantScope(models.TextChoices):
    SESSION = "session"
    PROJECT = "project"


class PermissionGrant(models.Model):
    """An 'always' reply, stored with an explicit scope so people can see and revoke it."""

    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE)
    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="permission_grants"
    )
    session = models.ForeignKey(Session, on_delete=models.CASCADE, null=True, blank=True)
    scope = models.CharField(max_length=16, choices=GrantScope.choices)
    permission = models.CharField(max_length=64)
    pattern = models.CharField(max_length=500)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


class Event(models.Model):
    """The durable per-session event log. `seq` is dense and monotonic per session (see publish)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.BigIntegerField()
    type = models.CharField(max_length=64)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="uniq_event_seq")]
        # Opening a session shows its latest notice (selectors.session_notice): without this, a session
        # that was never told anything would have all its events read back to find none.
        indexes = [
            models.Index(
                fields=["session", "seq"], condition=models.Q(type="session.notice"), name="event_notice_idx"
            )
        ]


class SessionDiff(models.Model):
    """The session's latest file changes as OpenCode's `SnapshotFileDiff` list (with each file's patch),
    what `GET /session/{id}/diff` answers. Kept off the session row, which every step reads: the row keeps
    only the counts (`Session.summary`)."""

    session = models.OneToOneField(Session, on_delete=models.CASCADE, primary_key=True, related_name="+")
    diffs = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)


class SessionShare(models.Model):
    """A read-only link to a session (OpenCode's /share), kept inside the tenant's rules
    (hangar.conversations.share_services): who may open it (`audience`, narrowed by the org's current
    `share_policy`), until when, and whether it was revoked. Rows stay after revocation: the history of who
    shared what, with the audit log. The token is the link's secret; it is never logged or audited."""

    id = models.CharField(primary_key=True, max_length=40)
    token = models.CharField(max_length=64, unique=True)
    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="shares")
    audience = models.CharField(max_length=8, choices=[("members", "members"), ("link", "link")])
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["session"], condition=models.Q(revoked_at=None), name="share_live_idx")
        ]
