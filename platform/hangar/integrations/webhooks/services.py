"""Writes for webhook triggers and endpoints: create (the secret is returned once), update, delete, and a
delivery's replay by hand. Org admins configure; each write is audited. Then the bookkeeping of calls in
and deliveries out: inbound receipts (`inbound.py` verifies and acts), deliveries and their attempts
(`outbound.py` decides what to send and sends it)."""

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from hangar.accounts.actors import Actor, system_actor
from hangar.accounts.models import Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.integrations.webhooks import netguard, selectors, signing
from hangar.integrations.webhooks.enqueue import enqueue_delivery
from hangar.integrations.webhooks.models import (
    DeliveryStatus,
    EventType,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookReceipt,
    WebhookTrigger,
)
from hangar.integrations.webhooks.template import TemplateError, template_check
from hangar.logging import get_logger
from hangar.projects import crypto

log = get_logger(__name__)

MAX_EVENT_TYPES = len(EventType.values)


def _admin(actor: Actor, org: Org) -> None:
    if actor.org_id != org.pk:
        from rest_framework.exceptions import NotFound

        raise NotFound()
    if actor.user is not None:
        require_role(actor, org.pk, Role.ADMIN)


def _clean_model(model: str) -> str:
    if model and ("/" not in model or len(model) > 200):
        raise ValidationError({"model": ["Must be providerID/modelID."]})
    return model


def trigger_create(
    *,
    actor: Actor,
    project,
    name: str,
    prompt_template: str,
    session=None,
    agent: str = "",
    model: str = "",
) -> tuple[WebhookTrigger, str]:
    """A new trigger and its signing secret (shown to the caller once, stored encrypted)."""
    _admin(actor, project.org)
    if session is not None and session.project_id != project.pk:
        raise ValidationError({"session": ["Must be a session of this project."]})
    try:
        template_check(prompt_template)
    except TemplateError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    if agent:
        from hangar.engine.agents.builtin import AGENTS

        if agent not in AGENTS or AGENTS[agent].hidden:
            raise ValidationError({"agent": ["Unknown agent."]})
    secret = signing.new_secret()
    with transaction.atomic():
        trigger = WebhookTrigger.objects.create(
            org_id=project.org_id,
            project=project,
            session=session,
            name=name,
            secret_encrypted=crypto.encrypt(secret),
            prompt_template=prompt_template,
            agent=agent,
            model=_clean_model(model),
            created_by=actor.user,
        )
        audit_record(
            actor=actor,
            action="webhook.trigger.create",
            target=trigger,
            data={"project": project.pk, "session": getattr(session, "pk", None), "name": name},
        )
    return trigger, secret


def trigger_delete(*, actor: Actor, trigger: WebhookTrigger) -> None:
    _admin(actor, trigger.org)
    with transaction.atomic():
        audit_record(
            actor=actor, action="webhook.trigger.delete", target=trigger, data={"name": trigger.name}
        )
        trigger.delete()


def forget_wanted_types(org_id: int) -> None:
    """After an endpoint of the org changed (created, edited, disabled, deleted), once committed: the next
    event batch re-reads which types the org's endpoints want (selectors.wanted_event_types)."""
    transaction.on_commit(lambda: cache.delete(selectors.wanted_types_key(org_id)), robust=True)


def _clean_event_types(event_types) -> list[str]:
    if not isinstance(event_types, list) or not event_types or len(event_types) > MAX_EVENT_TYPES:
        raise ValidationError({"event_types": ["Must be a non-empty list of event types."]})
    unknown = [t for t in event_types if t not in EventType.values]
    if unknown:
        raise ValidationError({"event_types": [f"Unknown event type: {unknown[0]}."]})
    return sorted(set(event_types))


def _clean_url(url: str) -> str:
    """Shape now, and the addresses the name has now (checked again, and pinned, at every send)."""
    try:
        netguard.resolve(url)
    except netguard.DestinationRefused as exc:
        raise ValidationError({"url": [str(exc)]}) from None
    return url.strip()


def endpoint_create(
    *, actor: Actor, org: Org, url: str, event_types: list[str], project=None
) -> tuple[WebhookEndpoint, str]:
    _admin(actor, org)
    if project is not None and project.org_id != org.pk:
        raise ValidationError({"project": ["Unknown project."]})
    url, event_types = _clean_url(url), _clean_event_types(event_types)
    secret = signing.new_secret()
    with transaction.atomic():
        Org.objects.select_for_update().filter(pk=org.pk).first()  # one create at a time counts them
        cap = settings.HANGAR_WEBHOOK_MAX_ENDPOINTS_PER_ORG
        if WebhookEndpoint.objects.filter(org=org).count() >= cap:
            raise ValidationError(
                {"endpoints": [f"An org has at most {cap} webhook endpoints: delete one to add another."]}
            )
        endpoint = WebhookEndpoint.objects.create(
            org=org,
            project=project,
            url=url,
            secret_encrypted=crypto.encrypt(secret),
            event_types=event_types,
            created_by=actor.user,
        )
        audit_record(
            actor=actor,
            action="webhook.endpoint.create",
            target=endpoint,
            data={"url": url, "event_types": event_types, "project": getattr(project, "pk", None)},
        )
        forget_wanted_types(org.pk)
    return endpoint, secret


def endpoint_update(
    *,
    actor: Actor,
    endpoint: WebhookEndpoint,
    url: str | None = None,
    event_types: list[str] | None = None,
    enabled: bool | None = None,
) -> WebhookEndpoint:
    """Change the URL, the subscriptions, or enable/disable. Enabling clears the failure streak."""
    _admin(actor, endpoint.org)
    changed: dict = {}
    if url is not None and url.strip() != endpoint.url:
        changed["url"] = {"from": endpoint.url, "to": _clean_url(url)}
        endpoint.url = url.strip()
    if event_types is not None:
        cleaned = _clean_event_types(event_types)
        if cleaned != endpoint.event_types:
            changed["event_types"] = {"from": endpoint.event_types, "to": cleaned}
            endpoint.event_types = cleaned
    if enabled is not None and enabled != endpoint.enabled:
        changed["enabled"] = {"from": endpoint.enabled, "to": enabled}
        endpoint.enabled = enabled
        endpoint.disabled_reason = "" if enabled else "disabled by a person"
        endpoint.failed_in_row = 0
    if not changed:
        return endpoint
    with transaction.atomic():
        endpoint.save()
        audit_record(actor=actor, action="webhook.endpoint.update", target=endpoint, data=changed)
        forget_wanted_types(endpoint.org_id)
    return endpoint


def endpoint_delete(*, actor: Actor, endpoint: WebhookEndpoint) -> None:
    _admin(actor, endpoint.org)
    with transaction.atomic():
        audit_record(
            actor=actor, action="webhook.endpoint.delete", target=endpoint, data={"url": endpoint.url}
        )
        endpoint.delete()
        forget_wanted_types(endpoint.org_id)


def delivery_replay(*, actor: Actor, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again, now, with its original id and body (receivers deduplicate on the id)."""
    _admin(actor, delivery.endpoint.org)
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.PENDING)
        audit_record(
            actor=actor,
            action="webhook.delivery.replay",
            target=delivery,
            data={"endpoint": delivery.endpoint_id, "message_id": delivery.message_id},
        )
        transaction.on_commit(lambda: enqueue_delivery(delivery.pk, manual=True))
    delivery.status = DeliveryStatus.PENDING
    return delivery


# --- inbound receipts (inbound.py, tasks.py) --------------------------------------------------------


def receipt_record(*, trigger: WebhookTrigger, message_id: str) -> WebhookReceipt:
    """A verified call's message id, recorded first in the call's transaction: a second call with the same
    id fails the unique constraint (IntegrityError), which the caller answers as a replay."""
    return WebhookReceipt.objects.create(trigger=trigger, message_id=message_id, session_id="")


def receipt_link(*, receipt: WebhookReceipt, session_id: str) -> None:
    WebhookReceipt.objects.filter(pk=receipt.pk).update(session_id=session_id)


def receipts_purge(*, received_before: datetime) -> int:
    """Forget message ids older than the verifier's window (a call that old is refused anyway)."""
    deleted, _ = WebhookReceipt.objects.filter(received_at__lt=received_before).delete()
    return deleted


# --- outbound deliveries (outbound.py) -------------------------------------------------------------


def delivery_create(
    *, endpoint: WebhookEndpoint, event_type: str, session_id: str, source_event_id: int, body: str
) -> WebhookDelivery | None:
    """One pending delivery of an event to an endpoint; None if the event was fanned out to it already (a
    re-run fan-out task)."""
    try:
        with transaction.atomic():
            return WebhookDelivery.objects.create(
                endpoint=endpoint,
                message_id=signing.new_message_id(),
                event_type=event_type,
                session_id=session_id,
                source_event_id=source_event_id,
                body=body,
            )
    except IntegrityError:
        return None


def backoff_s(attempt: int) -> float:
    """Exponential from the base, capped, with jitter (half to full), so failing receivers are not hit in
    lockstep by every delivery that failed with them."""
    base = settings.HANGAR_WEBHOOK_RETRY_BASE_S
    return min(settings.HANGAR_WEBHOOK_RETRY_CAP_S, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


def delivery_attempt_record(
    *, delivery_id: int, manual: bool, headers: dict[str, str], result: dict[str, Any], duration_ms: float
) -> float | None:
    """Log one attempt (`result`: the answer's status and body, or an error; `final` when retrying cannot
    help) and move the delivery on: succeeded; failed (by hand, final, or out of attempts: counted against
    the endpoint); or pending again after a backoff, whose delay is returned (None: no attempt follows)."""
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
            WebhookEndpoint.objects.filter(pk=delivery.endpoint_id).update(failed_in_row=0)
        elif manual or result.get("final") or delivery.attempts >= settings.HANGAR_WEBHOOK_MAX_ATTEMPTS:
            delivery.status = DeliveryStatus.FAILED
            if not manual:
                _count_failure(delivery.endpoint_id)
        else:
            delay = backoff_s(delivery.attempts)
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay) if delay else None
        delivery.save(update_fields=["attempts", "status", "next_attempt_at"])
    return delay


def _count_failure(endpoint_id: int) -> None:
    """A delivery exhausted its retries: after HANGAR_WEBHOOK_DISABLE_AFTER in a row, disable the endpoint."""
    WebhookEndpoint.objects.filter(pk=endpoint_id).update(failed_in_row=F("failed_in_row") + 1)
    row = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
    if not row.enabled or row.failed_in_row < settings.HANGAR_WEBHOOK_DISABLE_AFTER:
        return
    row.enabled = False
    row.disabled_reason = (
        f"disabled after {row.failed_in_row} deliveries in a row failed every attempt"
        f" ({datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC)"
    )
    row.save(update_fields=["enabled", "disabled_reason"])
    forget_wanted_types(row.org_id)
    audit_record(
        actor=system_actor(row.org_id, "webhooks"),
        action="webhook.endpoint.disabled",
        target=row,
        data={"url": row.url, "failed_in_row": row.failed_in_row},
    )
    log.warning("webhook_endpoint_disabled", endpoint=row.pk, org=row.org_id, url=row.url)
