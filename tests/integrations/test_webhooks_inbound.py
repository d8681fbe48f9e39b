"""Inbound webhooks: a call signed per Standard Webhooks starts (or prompts) a session from the trigger's
prompt template; forged, stale and replayed calls are 401 and audited; a body that does not fit is a 400
naming the field, and nothing is left half-created."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Message, Part, Session
from hangar.integrations.webhooks import signing
from hangar.integrations.webhooks.models import WebhookReceipt, WebhookTrigger
from tests.engine.conftest import text_of, wait_for, wait_idle

TEMPLATE = "CI failed on {{ body.repo }}: job {{ body.job.name }} (step {{ body.job.steps.0 }})."
BODY = {"repo": "acme/rocket", "job": {"name": "unit-tests", "steps": ["pytest -x", "lint"]}}


def create_trigger(api, persona, **extra) -> dict:
    response = api(persona).post(
        f"/api/orgs/{persona.org.slug}/webhooks/triggers/",
        {"name": "CI failures", "project": persona.project.pk, "prompt_template": TEMPLATE, **extra},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def call(trigger: dict, body, secret: str | None = None, msg_id: str | None = None, at=None, headers=None):
    raw = json.dumps(body)
    signed = signing.sign_headers(secret or trigger["secret"], msg_id or signing.new_message_id(), raw, at=at)
    signed = {**signed, **(headers or {})}
    path = "/hooks/in/" + trigger["url"].rsplit("/", 1)[1]
    extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in signed.items()}
    return Client().post(path, raw, content_type="application/json", **extra), signed


def refusals(trigger_id) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="webhook.trigger.refused", target_id=str(trigger_id)))


@pytest.mark.django_db(transaction=True)
def test_a_verified_call_starts_a_session_from_the_template_and_the_agent_runs(
    alice, api, script, scripted_credential, start_worker
):
    scripted_credential(alice)
    script_id = script.load([[{"text": "Looking at the failing unit tests."}]])
    trigger = create_trigger(api, alice, model=f"scripted/{script_id}", agent="plan")
    assert trigger["secret"].startswith("whsec_")
    listed = api(alice).get(f"/api/orgs/acme/webhooks/triggers/{trigger['id']}").json()
    assert "secret" not in listed and listed["url"] == trigger["url"]
    start_worker()

    response, _ = call(trigger, BODY)

    assert response.status_code == 202, response.content
    session = Session.objects.get(pk=response.json()["session"])
    assert session.project_id == alice.project.pk and session.agent == "plan" and session.creator is None
    user_text = Part.objects.get(session=session, message__role="user").data["text"]
    assert user_text == "CI failed on acme/rocket: job unit-tests (step pytest -x)."
    wait_idle(session)
    assert text_of(session) == "Looking at the failing unit tests."
    call_audit = AuditEvent.objects.get(action="webhook.trigger.call")
    assert call_audit.actor_type == "integration" and call_audit.data["session"] == session.pk


@pytest.mark.django_db
def test_a_forged_signature_is_refused_with_401_and_audited(alice, api):
    trigger = create_trigger(api, alice, model="scripted/x")
    forged = signing.new_secret()

    response, _ = call(trigger, BODY, secret=forged)

    assert response.status_code == 401
    assert not Session.objects.exists() and not WebhookReceipt.objects.exists()
    [audit] = refusals(trigger["id"])
    assert audit.data["reason"] == "No matching signature found" and audit.org_id == alice.org.pk


@pytest.mark.django_db
def test_a_body_changed_after_signing_is_refused(alice, api):
    trigger = create_trigger(api, alice, model="scripted/x")
    raw = json.dumps(BODY)
    headers = signing.sign_headers(trigger["secret"], signing.new_message_id(), raw)
    tampered = raw.replace("unit-tests", "deploy-prod")
    extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
    response = Client().post(
        "/hooks/in/" + trigger["url"].rsplit("/", 1)[1], tampered, content_type="application/json", **extra
    )
    assert response.status_code == 401 and not Session.objects.exists()


@pytest.mark.django_db
def test_a_stale_timestamp_is_refused_with_401_and_audited(alice, api):
    trigger = create_trigger(api, alice, model="scripted/x")
    six_minutes_ago = datetime.now(tz=UTC) - timedelta(minutes=6)

    response, _ = call(trigger, BODY, at=six_minutes_ago)

    assert response.status_code == 401
    assert not Session.objects.exists()
    assert refusals(trigger["id"])[0].data["reason"] == "Message timestamp too old"


@pytest.mark.django_db
def test_a_replayed_message_id_is_refused_with_401_and_audited(alice, api):
    trigger = create_trigger(api, alice, model="scripted/x")
    first, headers = call(trigger, BODY)
    assert first.status_code == 202

    # The same message again, within the timestamp tolerance: signature and timestamp are valid.
    again, _ = call(trigger, BODY, msg_id=headers["webhook-id"])

    assert again.status_code == 401
    assert Session.objects.count() == 1
    assert refusals(trigger["id"])[0].data == {
        "reason": "replayed message id",
        "message_id": headers["webhook-id"],
    }


@pytest.mark.django_db
def test_a_body_that_does_not_fit_the_template_is_a_400_naming_the_field_and_nothing_is_created(alice, api):
    trigger = create_trigger(api, alice, model="scripted/x")
    audits_before = AuditEvent.objects.count()
    body = {"repo": "acme/rocket", "job": {"steps": ["pytest"]}}

    response, headers = call(trigger, body)

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"body.job.name": ["missing from the body"]}
    assert not Session.objects.exists() and not Message.objects.exists()
    assert not WebhookReceipt.objects.exists() and AuditEvent.objects.count() == audits_before
    # Nothing was recorded, so the sender's corrected retry of the same message goes through.
    fixed, _ = call(trigger, BODY, msg_id=headers["webhook-id"])
    assert fixed.status_code == 202


@pytest.mark.django_db
def test_a_trigger_bound_to_a_session_prompts_that_session(alice, api):
    from hangar.conversations.services import session_create

    session = session_create(
        actor=alice.actor, project=alice.project, model={"providerID": "p", "modelID": "m"}
    )
    trigger = create_trigger(api, alice, session=session.pk)

    response, _ = call(trigger, BODY)

    assert response.status_code == 202 and response.json() == {"session": session.pk, "created": False}
    assert Session.objects.count() == 1
    assert Message.objects.filter(session=session, role="user").count() == 1


@pytest.mark.django_db
def test_templates_accept_only_body_paths(alice, api):
    for bad in ("{{ __import__('os') }}", "{{ body.a + 1 }}", "hello {{", "{% if x %}"):
        response = api(alice).post(
            "/api/orgs/acme/webhooks/triggers/",
            {"name": "t", "project": alice.project.pk, "prompt_template": bad},
            format="json",
        )
        if "{%" in bad:  # not a placeholder at all: plain text
            assert response.status_code == 201
            continue
        assert response.status_code == 400, bad
        assert "prompt_template" in response.json()["error"]["fields"]


@pytest.mark.django_db
def test_an_unknown_trigger_key_is_404_and_a_huge_body_is_refused(alice, api):
    assert Client().post("/hooks/in/nope", "{}", content_type="application/json").status_code == 404
    trigger = create_trigger(api, alice, model="scripted/x")
    response, _ = call(trigger, {"repo": "x" * 300_000, "job": {"name": "a", "steps": ["b"]}})
    assert response.status_code == 413 and not Session.objects.exists()


@pytest.mark.django_db
def test_triggers_are_tenant_scoped_and_only_admins_create_them(alice, bob, charlie, api):
    trigger = create_trigger(api, alice, model="scripted/x")
    assert api(charlie).get(f"/api/orgs/acme/webhooks/triggers/{trigger['id']}").status_code == 404
    assert api(charlie).get(f"/api/orgs/globex/webhooks/triggers/{trigger['id']}").status_code == 404
    assert api(charlie).delete(f"/api/orgs/globex/webhooks/triggers/{trigger['id']}").status_code == 404
    assert api(charlie).get("/api/orgs/globex/webhooks/triggers/").json() == []
    # charlie cannot aim a trigger at acme's project from his own org.
    response = api(charlie).post(
        "/api/orgs/globex/webhooks/triggers/",
        {"name": "x", "project": alice.project.pk, "prompt_template": "hi"},
        format="json",
    )
    assert response.status_code == 404
    response = api(bob).post(
        "/api/orgs/acme/webhooks/triggers/",
        {"name": "x", "project": alice.project.pk, "prompt_template": "hi"},
        format="json",
    )
    assert response.status_code == 403
    assert api(bob).get("/api/orgs/acme/webhooks/triggers/").status_code == 200
    assert WebhookTrigger.objects.count() == 1


@pytest.mark.django_db
def test_bad_signature_calls_write_one_audit_row_per_window_counting_the_rest(alice, api, settings):
    """Anyone who knows a trigger's URL can call it: a flood of forged calls is refused each time, but
    audited once per window (HANGAR_WEBHOOK_REFUSED_AUDIT_WINDOW_S), the next row counting those left out."""
    settings.HANGAR_WEBHOOK_REFUSED_AUDIT_WINDOW_S = 5
    trigger = create_trigger(api, alice, model="scripted/x")
    forged = signing.new_secret()
    for _ in range(20):
        response, _ = call(trigger, BODY, secret=forged)
        assert response.status_code == 401
    [audit] = refusals(trigger["id"])
    assert audit.data["reason"] == "No matching signature found" and "suppressed" not in audit.data

    def second_row():
        call(trigger, BODY, secret=forged)
        return len(refusals(trigger["id"])) >= 2

    wait_for(second_row, timeout=30, every=0.05, what="the next window's audit row")
    latest = max(refusals(trigger["id"]), key=lambda a: a.pk)
    assert latest.data["suppressed"] >= 19
    assert not Session.objects.exists()


@pytest.mark.django_db
def test_a_webhook_started_session_asks_before_acting_even_under_permissive_project_rules(alice, api):
    """Its prompt is a third party's text (an issue title, a CI log): whatever the project allows, the
    session it starts asks a person before it runs a command, edits, fetches or starts a task."""
    from hangar.engine.agents import permissions as perm

    alice.project.permission_rules = [{"permission": "*", "pattern": "*", "action": "allow"}]
    alice.project.save(update_fields=["permission_rules"])
    trigger = create_trigger(api, alice, model="scripted/x")
    response, _ = call(trigger, BODY)
    assert response.status_code == 202, response.content
    session = Session.objects.get(pk=response.json()["session"])
    rules = perm.session_ruleset([], alice.project.permission_rules, session.permission)

    def decide(permission: str, pattern: str = "*") -> str:
        return perm.decide(permission, [pattern], ruleset=rules, org_policy=[])

    for permission in ("bash", "edit", "webfetch", "task", "external_directory"):
        assert decide(permission, "x") == "ask", permission
    assert decide("read", "src/app.py") == "allow"  # reading the workspace needs nobody
