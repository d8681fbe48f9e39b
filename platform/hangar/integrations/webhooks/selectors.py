"""Reads for triggers, endpoints and the delivery log, scoped to an org the caller is a member of
(hangar.api.scoping). Anything outside it is a 404."""

from django.core.cache import cache
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
# A bound on a stale answer should an invalidation be lost (a cache outage): endpoints change rarely.
WANTED_TTL_S = 300


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


def wanted_event_types(org_id: int) -> frozenset[str]:
    """The public event types the org's enabled endpoints subscribe to: whether a fan-out task is worth
    enqueueing for a batch of events (most orgs have no endpoint, and the broker round trip costs far more
    than this). Kept in the cache so that publishing an event adds no database statement; the endpoint
    services forget it whenever an endpoint changes (services.forget_wanted_types)."""
    key = wanted_types_key(org_id)
    cached = cache.get(key)
    if cached is None:
        rows = WebhookEndpoint.objects.filter(org_id=org_id, enabled=True).values_list(
            "event_types", flat=True
        )
        cached = sorted({str(t) for types in rows for t in types})
        cache.set(key, cached, WANTED_TTL_S)
    return frozenset(cached)


def wanted_types_key(org_id: int) -> str:
    return f"webhooks:wanted:{org_id}"
