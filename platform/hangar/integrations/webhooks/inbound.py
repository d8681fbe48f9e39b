"""A signed call to a trigger's URL starts a session (or prompts the trigger's session) with the prompt
template filled from the JSON body. Verification first (signature, timestamp within 5 minutes, message id
never seen): any failure is refused and audited, and nothing else happens. Anyone who knows a trigger's URL
can call it, so refusals are audited once per trigger per HANGAR_WEBHOOK_REFUSED_AUDIT_WINDOW_S (default
60 s), the next row counting the refusals left out (`suppressed`): a flood cannot fill the audit table. Then, in ONE transaction, the
message id is recorded, the prompt rendered, the session created and prompted: a body that does not fit
the template (or any other failure) leaves no receipt, no session and no message."""

import json
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction

from hangar.accounts.actors import Actor
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record
from hangar.conversations.models import Session
from hangar.conversations.services import session_create
from hangar.integrations.webhooks import signing
from hangar.integrations.webhooks.models import WebhookTrigger
from hangar.integrations.webhooks.selectors import receipt_seen
from hangar.integrations.webhooks.services import receipt_link, receipt_record
from hangar.integrations.webhooks.template import template_render
from hangar.projects import crypto

MAX_BODY = 256 * 1024
# A session a call starts works from a third party's text (an issue title, a CI log): whatever the project
# allows, it asks a person before it acts on anything outside reading the workspace. Session rules only
# narrow (hangar.engine.agents.permissions), so these make the project's allows asks and leave its asks and denies
# as they are; a member can answer each ask, or give the session rules of their own.
WEBHOOK_SESSION_RULES = [
    {"permission": name, "pattern": "*", "action": "ask"}
    for name in ("bash", "edit", "webfetch", "task", "external_directory", "skill")
]
MAX_MESSAGE_ID = 200


class Refused(Exception):
    """401: the call is not from whoever holds the trigger's secret (or is a replay)."""


@dataclass(frozen=True)
class Accepted:
    session: Session
    created: bool


def trigger_actor(trigger: WebhookTrigger, ip: str | None, request_id: str = "") -> Actor:
    return Actor(
        type=ActorType.INTEGRATION,
        org_id=trigger.org_id,
        label=f"webhook:{trigger.pk}:{trigger.name}"[:200],
        ip=ip,
        request_id=request_id,
    )


def _refuse(actor: Actor, trigger: WebhookTrigger, reason: str, message_id: str) -> Refused:
    """The Refused to raise; audited unless this trigger's refusals were audited within the window."""
    key = f"webhook_refused_throttle_{trigger.pk}"
    if not cache.add(key, 1, timeout=max(1, int(settings.HANGAR_WEBHOOK_REFUSED_AUDIT_WINDOW_S))):
        cache.add(f"{key}_n", 0, timeout=7 * 24 * 3600)
        cache.incr(f"{key}_n")
        return Refused(reason)
    suppressed = cache.get(f"{key}_n") or 0
    data = {"reason": reason, "message_id": message_id[:MAX_MESSAGE_ID]}
    with transaction.atomic():
        audit_record(
            actor=actor,
            action="webhook.trigger.refused",
            target=trigger,
            data={**data, "suppressed": suppressed} if suppressed else data,
        )
    if suppressed:
        cache.decr(f"{key}_n", suppressed)  # what this row counted; later ones go to the next
    return Refused(reason)


def trigger_receive(*, trigger: WebhookTrigger, body: bytes, headers: dict, actor: Actor) -> Accepted:
    """Verify and act on one call. Raises Refused (401), TemplateError (400 naming the field),
    ValueError (400: not JSON, too big) or engine.PromptRejected (400)."""
    headers = {k.lower(): v for k, v in headers.items()}
    message_id = headers.get("webhook-id", "")
    try:
        signing.verify(crypto.decrypt(trigger.secret_encrypted), body, headers)
    except signing.WebhookVerificationError as exc:
        raise _refuse(actor, trigger, str(exc), message_id) from None
    if len(message_id) > MAX_MESSAGE_ID:
        raise _refuse(actor, trigger, "message id too long", message_id)
    if len(body) > MAX_BODY:
        raise ValueError(f"the body is larger than {MAX_BODY} bytes")
    try:
        payload = json.loads(body)
    except ValueError:
        raise ValueError("the body is not JSON") from None
    from hangar.engine.services import session_prompt

    try:
        with transaction.atomic():
            receipt = receipt_record(trigger=trigger, message_id=message_id)
            prompt = template_render(trigger.prompt_template, payload)
            session = trigger.session
            created = session is None
            if session is None:
                model = None
                if trigger.model:
                    provider, _, model_id = trigger.model.partition("/")
                    model = {"providerID": provider, "modelID": model_id}
                session = session_create(
                    actor=actor,
                    project=trigger.project,
                    title=trigger.name[:200],
                    agent=trigger.agent or None,
                    model=model,
                    permission=WEBHOOK_SESSION_RULES,
                    source="webhook",
                )
            session_prompt(actor=actor, session=session, parts=[{"type": "text", "text": prompt}])
            receipt_link(receipt=receipt, session_id=session.pk)
            audit_record(
                actor=actor,
                action="webhook.trigger.call",
                target=trigger,
                data={"message_id": message_id, "session": session.pk, "created": created},
            )
    except IntegrityError:
        if receipt_seen(trigger, message_id):
            raise _refuse(actor, trigger, "replayed message id", message_id) from None
        raise
    return Accepted(session=session, created=created)
