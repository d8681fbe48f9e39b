"""Reads for triggers, endpoints and the delivery log, scoped to an org the caller is a member of
(hangar.api.scoping). Anything outside it is a 404."""

from django.db.models import QuerySet
from rest_framework.exceptions import NotFound

from hangar.accounts.models import Org
from hangar.integrations.webhooks.models import (
    WebhookDelivery,
    WebhookEndpoint,
    WebhookReceipt,
    WebhookTrigger,
)

MAX_DELIVERIES = 200


def _one(queryset: QuerySet, pk):
    try:
        row = queryset.filter(pk=int(pk)).first()
    except (TypeError, ValueError):
        row = None
    if row is None:
        raise NotFound()
    return row


def trigger_list(*, org: Org) -> QuerySet[WebhookTrigger]:
    return WebhookTrigger.objects.filter(org=org).select_related("project", "org")


def trigger_get(*, org: Org, trigger_id) -> WebhookTrigger:
    return _one(trigger_list(org=org), trigger_id)


def trigger_by_key(key: str) -> WebhookTrigger | None:
    """The inbound URL's trigger (the key is the only thing an outside caller names)."""
    if not key or len(key) > 64:
        return None
    return (
        WebhookTrigger.objects.filter(key=key, enabled=True)
        .select_related("project", "session", "org")
        .first()
    )


def endpoint_list(*, org: Org) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(org=org).select_related("org")


def endpoint_get(*, org: Org, endpoint_id) -> WebhookEndpoint:
    return _one(endpoint_list(org=org), endpoint_id)


def delivery_list(*, org: Org, endpoint: WebhookEndpoint | None = None, status: str = "") -> QuerySet:
    deliveries = WebhookDelivery.objects.filter(endpoint__org=org).select_related("endpoint__org")
    if endpoint is not None:
        deliveries = deliveries.filter(endpoint=endpoint)
    if status:
        deliveries = deliveries.filter(status=status)
    return deliveries.prefetch_related("attempt_log").order_by("-id")


def delivery_get(*, org: Org, delivery_id) -> WebhookDelivery:
    return _one(delivery_list(org=org), delivery_id)


def receipt_seen(trigger: WebhookTrigger, message_id: str) -> bool:
    """Whether a call with this message id was already accepted (a replay, when verified again)."""
    return WebhookReceipt.objects.filter(trigger=trigger, message_id=message_id).exists()


def endpoints_wanting(*, org_id: int, event_types: set[str]) -> bool:
    """Whether any enabled endpoint of the org subscribes to one of `event_types` (public names): the
    fan-out task is worth enqueueing. One indexed read, far cheaper than the broker round trip it saves
    for the many orgs that have no endpoints."""
    return WebhookEndpoint.objects.filter(
        org_id=org_id, enabled=True, event_types__has_any_keys=sorted(str(t) for t in event_types)
    ).exists()
