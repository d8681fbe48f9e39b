"""Inbound triggers (a signed call starts or prompts a session) and outbound endpoints (signed event
deliveries, retried and logged). Secrets are encrypted at rest like provider keys (hangar.projects.crypto)
and shown once, at creation."""

import secrets

from django.conf import settings
from django.db import models


def new_trigger_key() -> str:
    return secrets.token_urlsafe(24)


class EventType(models.TextChoices):
    SESSION_CREATED = "session.created"
    SESSION_IDLE = "session.idle"
    SESSION_ERROR = "session.error"
    PERMISSION_ASKED = "permission.asked"
    QUESTION_ASKED = "question.asked"  # the question tool (hangar.engine.tools.question)
    PUSH_DONE = "push.done"  # from the store's workspace.pushed
    BUDGET_REACHED = "budget.reached"  # a hard budget stopped a session (conversations.budget_services)


class WebhookTrigger(models.Model):
    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE, related_name="webhook_triggers")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="webhook_triggers")
    # Set: each call prompts this session instead of starting a new one.
    session = models.ForeignKey(
        "conversations.Session", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    name = models.CharField(max_length=150)
    key = models.CharField(max_length=64, unique=True, default=new_trigger_key, editable=False)
    secret_encrypted = models.TextField()
    prompt_template = models.TextField()
    agent = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=200, blank=True, help_text="providerID/modelID")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class WebhookReceipt(models.Model):
    """A verified message id, kept so the same id is refused as a replay (within the 5-minute window)."""

    trigger = models.ForeignKey(WebhookTrigger, on_delete=models.CASCADE, related_name="receipts")
    message_id = models.CharField(max_length=200)
    session_id = models.CharField(max_length=40)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trigger", "message_id"], name="uniq_webhook_receipt")]


class WebhookEndpoint(models.Model):
    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE, related_name="webhook_endpoints")
    # None: every project of the org.
    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    url = models.CharField(max_length=2000)
    secret_encrypted = models.TextField()
    event_types = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    # Deliveries that exhausted their retries in a row; reset by a success.
    failed_in_row = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["org", "enabled"])]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """One message to one endpoint. Its id (`webhook-id`) stays the same across retries and replays, as
    the spec asks, so receivers can deduplicate."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    message_id = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=64)
    session_id = models.CharField(max_length=40, blank=True)
    source_event_id = models.BigIntegerField(null=True, blank=True)
    body = models.TextField(help_text="the exact JSON sent")
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "source_event_id"],
                condition=models.Q(source_event_id__isnull=False),
                name="uniq_delivery_event",
            )
        ]


class WebhookAttempt(models.Model):
    """The delivery log: one row per HTTP attempt."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    manual = models.BooleanField(default=False, help_text="a replay by hand")
    request_headers = models.JSONField(default=dict)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True, help_text="first 2 KB")
    error = models.CharField(max_length=300, blank=True)
    duration_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
