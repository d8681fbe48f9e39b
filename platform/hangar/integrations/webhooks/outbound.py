"""Signed event deliveries to subscribed endpoints.

`on_events` is the store's event sink (registered in apps.ready): it runs inside the agent step's
publish, so it only picks the event types endpoints can subscribe to (a few per run: created, idle,
error, asked) and schedules the fan-out task on commit; everything else (finding endpoints, writing
deliveries, HTTP) happens in Celery. `delivery_attempt` makes one HTTP attempt and records it; the task
retries with exponential backoff and jitter, and an endpoint whose deliveries keep exhausting their
retries is disabled (audited)."""

import json
import random
import time
from datetime import UTC, datetime, timedelta

import httpx
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.models import Event, Session
from hangar.integrations.webhooks import netguard, signing
from hangar.integrations.webhooks.models import (
    DeliveryStatus,
    EventType,
    WebhookAttempt,
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
    ids = [e.id for e in events if e.type in OUTBOUND]
    if ids:
        from hangar.integrations.webhooks.tasks import enqueue_fanout

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
            if public not in endpoint.event_types:
                continue
            try:
                with transaction.atomic():
                    delivery = WebhookDelivery.objects.create(
                        endpoint=endpoint,
                        message_id=signing.new_message_id(),
                        event_type=public,
                        session_id=session.pk,
                        source_event_id=event.pk,
                        body=event_body(event, session),
                    )
            except IntegrityError:  # this event was fanned out already (a re-run task)
                continue
            created.append(delivery.pk)
    return created


def backoff_s(attempt: int) -> float:
    """Exponential from the base, capped, with jitter (half to full), so failing receivers are not hit in
    lockstep by every delivery that failed with them."""
    base = settings.HANGAR_WEBHOOK_RETRY_BASE_S
    return min(settings.HANGAR_WEBHOOK_RETRY_CAP_S, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


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
    duration_ms = (time.perf_counter() - started) * 1000
    ok = result.get("status") is not None and 200 <= result["status"] < 300
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().get(pk=delivery_id)
        delivery.attempts += 1
        WebhookAttempt.objects.create(
            delivery=delivery,
            number=delivery.attempts,
            manual=manual,
            request_headers=headers,
            response_status=result.get("status"),
            response_body=result.get("body", ""),
            error=result.get("error", ""),
            duration_ms=duration_ms,
        )
        delay = None
        if ok:
            delivery.status = DeliveryStatus.SUCCEEDED
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failed_in_row=0)
        elif manual or result.get("final") or delivery.attempts >= settings.HANGAR_WEBHOOK_MAX_ATTEMPTS:
            delivery.status = DeliveryStatus.FAILED
            if not manual:
                _count_failure(endpoint)
        else:
            delay = backoff_s(delivery.attempts)
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay) if delay else None
        delivery.save(update_fields=["attempts", "status", "next_attempt_at"])
    return delay


def _count_failure(endpoint: WebhookEndpoint) -> None:
    """A delivery exhausted its retries: after HANGAR_WEBHOOK_DISABLE_AFTER in a row, disable the endpoint."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failed_in_row=F("failed_in_row") + 1)
    row = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if not row.enabled or row.failed_in_row < settings.HANGAR_WEBHOOK_DISABLE_AFTER:
        return
    row.enabled = False
    row.disabled_reason = (
        f"disabled after {row.failed_in_row} deliveries in a row failed every attempt"
        f" ({datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC)"
    )
    row.save(update_fields=["enabled", "disabled_reason"])
    audit_record(
        actor=system_actor(row.org_id, "webhooks"),
        action="webhook.endpoint.disabled",
        target=row,
        data={"url": row.url, "failed_in_row": row.failed_in_row},
    )
    log.warning("webhook_endpoint_disabled", endpoint=row.pk, org=row.org_id, url=row.url)
