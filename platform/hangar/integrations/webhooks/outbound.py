"""Signed event deliveries to subscribed endpoints.

`on_events` is the store's event sink (registered in apps.ready): it runs inside the agent step's
publish, so it only picks the event types endpoints can subscribe to (a few per run: created, idle,
error, asked) and schedules the fan-out task on commit; everything else (finding endpoints, writing
deliveries, HTTP) happens in Celery. `delivery_attempt` makes one HTTP attempt and records it; the task
retries with exponential backoff and jitter, and an endpoint whose deliveries keep exhausting their
retries is disabled (audited)."""

import json
import time
from datetime import UTC

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from hangar.conversations.models import Event, Session
from hangar.integrations.webhooks import netguard, selectors, services, signing
from hangar.integrations.webhooks.models import (
    DeliveryStatus,
    EventType,
    WebhookDelivery,
    WebhookEndpoint,
)
from hangar.logging import get_logger
from hangar.projects import crypto

log = get_logger(__name__)

# Stored event type -> the public type endpoints subscribe to (the same name unless the store's differs).
OUTBOUND = {
    EventType.SESSION_CREATED: EventType.SESSION_CREATED,
    EventType.SESSION_IDLE: EventType.SESSION_IDLE,
    EventType.SESSION_ERROR: EventType.SESSION_ERROR,
    EventType.PERMISSION_ASKED: EventType.PERMISSION_ASKED,
    EventType.QUESTION_ASKED: EventType.QUESTION_ASKED,
    "workspace.pushed": EventType.PUSH_DONE,
    EventType.BUDGET_REACHED: EventType.BUDGET_REACHED,
}
TIMEOUT_S = 10.0
MAX_RESPONSE_LOGGED = 2048
USER_AGENT = "Hangar-Webhooks/1"


def on_events(session: Session, events: list[Event]) -> None:
    wanted = [e for e in events if e.type in OUTBOUND]
    if wanted and selectors.wanted_event_types(session.org_id) & {str(OUTBOUND[e.type]) for e in wanted}:
        from hangar.integrations.webhooks.tasks import enqueue_fanout

        ids = [e.id for e in wanted]
        transaction.on_commit(lambda: enqueue_fanout(session.pk, ids), robust=True)


def event_body(event: Event, session: Session) -> str:
    """The Standard Webhooks payload shape: {type, timestamp, data} (type: the public name)."""
    data = {
        "orgID": session.org_id,
        "projectID": session.project_id,
        "sessionID": session.pk,
        "url": f"{settings.PUBLIC_URL}/sessions/{session.pk}",
        **event.payload,
    }
    stamp = event.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return json.dumps({"type": OUTBOUND[event.type], "timestamp": stamp, "data": data}, separators=(",", ":"))


def deliveries_create(session_id: str, event_ids: list[int]) -> list[int]:
    """One delivery per (subscribed enabled endpoint, event); an event already fanned out is skipped."""
    session = Session.objects.filter(pk=session_id).first()
    if session is None:
        return []
    endpoints = list(
        WebhookEndpoint.objects.filter(org_id=session.org_id, enabled=True).filter(
            Q(project__isnull=True) | Q(project_id=session.project_id)
        )
    )
    if not endpoints:
        return []
    created = []
    for event in Event.objects.filter(pk__in=event_ids, session_id=session_id).order_by("seq"):
        public = OUTBOUND.get(event.type)
        for endpoint in endpoints:
            if public is None or public not in endpoint.event_types:
                continue
            delivery = services.delivery_create(
                endpoint=endpoint,
                event_type=public,
                session_id=session.pk,
                source_event_id=event.pk,
                body=event_body(event, session),
            )
            if delivery is not None:
                created.append(delivery.pk)
    return created


def _send(endpoint: WebhookEndpoint, delivery: WebhookDelivery, headers: dict) -> dict:
    """One POST to the pinned address; returns what the log records."""
    try:
        pinned = netguard.resolve(endpoint.url)
    except netguard.DestinationRefused as exc:
        return {"error": f"refused: {exc}"[:300], "final": True}
    extensions = {"sni_hostname": pinned.sni} if pinned.sni else {}
    try:
        with httpx.Client(timeout=TIMEOUT_S, follow_redirects=False) as client:
            response = client.post(
                pinned.url,
                content=delivery.body.encode(),
                headers={**headers, "Host": pinned.host},
                extensions=extensions,
            )
            return {"status": response.status_code, "body": response.text[:MAX_RESPONSE_LOGGED]}
    except httpx.HTTPError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def delivery_attempt(delivery_id: int, manual: bool = False) -> float | None:
    """Make one attempt and log it. Returns the delay before the next automatic attempt, or None when
    there is none (delivered, exhausted, replayed by hand, or nothing to do)."""
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != DeliveryStatus.PENDING:
        return None
    endpoint = delivery.endpoint
    if not endpoint.enabled and not manual:
        return None
    headers = {
        **signing.sign_headers(crypto.decrypt(endpoint.secret_encrypted), delivery.message_id, delivery.body),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
    started = time.perf_counter()
    result = _send(endpoint, delivery, headers)
    return services.delivery_attempt_record(
        delivery_id=delivery_id,
        manual=manual,
        headers=headers,
        result=result,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
