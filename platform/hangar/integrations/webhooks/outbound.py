"""Signed event deliveries to subscribed endpoints.

`on_events` is the store's event sink (registered in apps.ready): it runs inside the agent step's
publish, so it only picks the event types endpoints can subscribe to (a few per run: created, idle,
error, asked) and schedules the fan-out task on commit; everything else (finding endpoints, writing
deliveries, HTTP) happens in Celery. `delivery_attempt` makes one HTTP attempt and records it; the task
retries with exponential backoff and jitter, and an endpoint whose deliveries keep exhausting their
retries is disabled (audited).

An attempt waits on someone else's server, so it is bounded (`transport.post`: one total deadline,
HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S, and only MAX_RESPONSE_LOGGED bytes of the answer read), holds no
database connection while it waits, and an org has at most HANGAR_WEBHOOK_ORG_IN_FLIGHT attempts in flight
at once (a counter in Redis; over it the task puts the delivery back a moment later, OrgBusy). Deliveries
run on their own queue (hangar.integrations.queue), never in a thread an agent step is waiting for."""

import json
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q

from hangar.conversations.models import Event, Session
from hangar.integrations.webhooks import enqueue, netguard, selectors, services, signing, transport
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
MAX_RESPONSE_LOGGED = 2048
USER_AGENT = "Hangar-Webhooks/1"


def on_events(session: Session, events: list[Event]) -> None:
    wanted = [e for e in events if e.type in OUTBOUND]
    if wanted and selectors.wanted_event_types(session.org_id) & {str(OUTBOUND[e.type]) for e in wanted}:
        ids = [e.id for e in wanted]
        transaction.on_commit(lambda: enqueue.enqueue_fanout(session.pk, ids), robust=True)


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


class OrgBusy(Exception):
    """The org has its share of attempts in flight: try this delivery again in `retry_in` seconds."""

    def __init__(self, retry_in: float) -> None:
        super().__init__(retry_in)
        self.retry_in = retry_in


def _send(endpoint: WebhookEndpoint, delivery: WebhookDelivery, headers: dict) -> dict:
    """One POST to the pinned address; returns what the log records."""
    try:
        pinned = netguard.resolve(endpoint.url)
    except netguard.DestinationRefused as exc:
        return {"error": f"refused: {exc}"[:300], "final": True}
    try:
        answer = transport.post(
            pinned.url,
            body=delivery.body.encode(),
            headers={**headers, "host": pinned.host},
            sni=pinned.sni,
            deadline_s=settings.HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S,
            keep=MAX_RESPONSE_LOGGED,
        )
    except transport.DeadlinePassed as exc:
        return {"error": f"deadline: {exc}"[:300]}
    except (*transport.ERRORS, OSError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"status": answer.status, "body": answer.body.decode("utf-8", "replace")}


def _in_flight_key(org_id: int) -> str:
    return f"webhooks:in-flight:{org_id}"


@contextmanager
def _in_flight_slot(org_id: int) -> Iterator[None]:
    """One of the org's HANGAR_WEBHOOK_ORG_IN_FLIGHT attempt slots, or OrgBusy. The counter expires a while
    after the deadline, so a worker killed mid-attempt cannot hold a slot for ever."""
    key, ttl = _in_flight_key(org_id), int(settings.HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S * 2) + 30
    cache.add(key, 0, timeout=ttl)
    try:
        taken = cache.incr(key)
    except ValueError:  # it expired between the two calls
        cache.add(key, 1, timeout=ttl)
        taken = 1
    if taken > settings.HANGAR_WEBHOOK_ORG_IN_FLIGHT:
        cache.decr(key)
        raise OrgBusy(retry_in=1.0 + random.random())
    cache.touch(key, ttl)
    try:
        yield
    finally:
        try:
            cache.decr(key)
        except ValueError:
            pass  # expired meanwhile: nothing is counted for it any more


def delivery_attempt(delivery_id: int, manual: bool = False) -> float | None:
    """Make one attempt and log it. Returns the delay before the next automatic attempt, or None when
    there is none (delivered, exhausted, replayed by hand, or nothing to do). OrgBusy: the org has its
    share of attempts in flight, nothing was sent."""
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
    with _in_flight_slot(endpoint.org_id):
        if not connection.in_atomic_block:
            connection.close()  # no database connection waits on someone else's server
        started = time.perf_counter()
        result = _send(endpoint, delivery, headers)
        duration_ms = (time.perf_counter() - started) * 1000
    return services.delivery_attempt_record(
        delivery_id=delivery_id, manual=manual, headers=headers, result=result, duration_ms=duration_ms
    )
