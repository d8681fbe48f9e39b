"""Writes for webhook triggers and endpoints: create (the secret is returned once), update, delete, and a
delivery's replay by hand. Org admins configure; each write is audited. Inbound calls are in
`inbound.py`, delivery in `outbound.py`."""

from django.db import transaction
from rest_framework.exceptions import ValidationError

from hangar.accounts.actors import Actor
from hangar.accounts.models import Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.integrations.webhooks import netguard, signing
from hangar.integrations.webhooks.models import (
    DeliveryStatus,
    EventType,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookTrigger,
)
from hangar.integrations.webhooks.template import TemplateError, template_check
from hangar.projects import crypto

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
        from hangar.engine.agents import AGENTS

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
    return endpoint


def endpoint_delete(*, actor: Actor, endpoint: WebhookEndpoint) -> None:
    _admin(actor, endpoint.org)
    with transaction.atomic():
        audit_record(
            actor=actor, action="webhook.endpoint.delete", target=endpoint, data={"url": endpoint.url}
        )
        endpoint.delete()


def delivery_replay(*, actor: Actor, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again, now, with its original id and body (receivers deduplicate on the id)."""
    from hangar.integrations.webhooks.tasks import enqueue_delivery

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
