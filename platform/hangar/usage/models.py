"""What model calls cost: the ledger (one row per call), its daily rollup, budgets and the org's model
allow-list.

The ledger keeps its keys as plain columns, not foreign keys: spend history outlives the session, project
or member it names (a deleted session's cost was still spent), and an insert on the agent's step path
checks no constraint it does not need.
"""

from django.db import models


class CallKind(models.TextChoices):
    STEP = "step"
    TITLE = "title"
    COMPACTION = "compaction"


class UsageRecord(models.Model):
    """One model call. Written by `hangar.usage.services` in the statement that records its cost."""

    org_id = models.BigIntegerField()
    project_id = models.BigIntegerField(null=True)
    session_id = models.CharField(max_length=40, blank=True)
    user_id = models.BigIntegerField(null=True, help_text="the prompter whose turn made the call")
    kind = models.CharField(max_length=16, choices=CallKind.choices)
    source = models.CharField(max_length=16, blank=True, help_text="what started the session (slack...)")
    provider = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    reasoning_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    latency_ms = models.IntegerField(null=True)
    outcome = models.CharField(max_length=16, help_text="ok | error | interrupted")
    # db_default: rows written by raw SQL that predates the column (bench/usage.py) still insert.
    tokens_estimated = models.BooleanField(
        default=False,
        db_default=False,
        help_text="the server reported no usage: Hangar counted the tokens (~4 characters each)",
    )
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["org_id", "created_at"], name="usage_record_org_time"),
            models.Index(fields=["session_id"], name="usage_record_session"),
        ]


class Dimension(models.TextChoices):
    ORG = "o"
    PROJECT = "p"
    MEMBER = "u"
    MODEL = "m"


class UsageRollup(models.Model):
    """The ledger summed per org, UTC day and one dimension at a time: the org as a whole (key ""), each
    project (its id), each member (user id; "0" = no person, an integration's run on the org's key) and
    each model ("provider/model"). The statement that appends a call to the ledger adds it to its four rows
    (an upsert), so usage reads and budget checks never scan the ledger: an org's month is at most 31 rows
    per key, however many calls it made."""

    org_id = models.BigIntegerField()
    day = models.DateField()
    dim = models.CharField(max_length=1, choices=Dimension.choices)
    key = models.CharField(max_length=300, blank=True)
    calls = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    reasoning_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    estimated_calls = models.BigIntegerField(
        default=0, db_default=0, help_text="calls whose tokens Hangar estimated"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org_id", "dim", "key", "day"], name="usage_rollup_key")
        ]


class BudgetScope(models.TextChoices):
    ORG = "org"
    PROJECT = "project"
    MEMBER = "member"


class BudgetPeriod(models.TextChoices):
    DAY = "day"
    MONTH = "month"


class Budget(models.Model):
    """A spend limit on the org, one project or one member, per UTC day or calendar month. `hard_limit`
    stops model calls; `soft_limit` alerts once per period (`alerted_for` = the period it last alerted)."""

    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE, related_name="budgets")
    scope = models.CharField(max_length=8, choices=BudgetScope.choices)
    project_id = models.BigIntegerField(null=True, blank=True)
    user_id = models.BigIntegerField(null=True, blank=True)
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices)
    hard_limit = models.FloatField(null=True, blank=True)
    soft_limit = models.FloatField(null=True, blank=True)
    alerted_for = models.DateField(null=True, blank=True)
    # An admin's override (audited): this much more may be spent in the period starting `override_for`,
    # past the hard limit; it lapses with that period.
    override_amount = models.FloatField(default=0.0)
    override_for = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["org"], name="usage_budget_org")]
        constraints = [
            models.UniqueConstraint(
                fields=["org", "scope", "project_id", "user_id", "period"],
                name="usage_budget_key",
                nulls_distinct=False,
            )
        ]


class ModelAllowList(models.Model):
    """The models an org's sessions may call ("provider/model" or a bare model id); no row or an empty
    list: every model."""

    org = models.OneToOneField("accounts.Org", on_delete=models.CASCADE, primary_key=True)
    allowed = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)


class BudgetHold(models.Model):
    """A model call's worst-case cost, reserved against the hard budgets covering it from just before the
    call until its ledger row settles it (hangar.conversations.budget_services.session_budget_reserve).
    One per session (a session makes one call at a time). A hold counts only while its session's run
    lease is live, so a run that dies mid-call frees its reservation when its lease expires; a settled
    hold is 0 until the run that took it deletes it as it ends."""

    session_id = models.CharField(max_length=40, primary_key=True)
    org_id = models.BigIntegerField()
    project_id = models.BigIntegerField(null=True)
    user_id = models.BigIntegerField(null=True)
    amount = models.FloatField(default=0.0)
    reserved_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["org_id"], name="usage_budgethold_org")]
