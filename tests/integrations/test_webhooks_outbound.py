"""Outbound webhooks: session events reach subscribed endpoints signed per Standard Webhooks (checked here
by an independent implementation of the spec), failures are retried with backoff, a sustained failure
disables the endpoint (audited), a delivery can be replayed by hand, and private destinations are refused
unless the operator allows them."""

import base64
import hashlib
import hmac
import json
import time

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from hangar.integrations.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from hangar.integrations.webhooks.outbound import delivery_attempt
from tests.engine.conftest import text_prompt, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def spec_verify(secret: str, headers: dict, body: bytes, tolerance_s: int = 300) -> bool:
    """Standard Webhooks verification written from the spec, not the library: HMAC-SHA256 over
    "{id}.{timestamp}.{body}" keyed with the base64 bytes after "whsec_", sent as space-separated "v1,<b64>"."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    msg_id, stamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(stamp)) > tolerance_s:
        return False
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest())
    return any(
        version == "v1" and hmac.compare_digest(expected, sig.encode())
        for version, _, sig in (s.partition(",") for s in headers["webhook-signature"].split(" "))
    )


@pytest.fixture
def allow_private(settings):
    settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE = True


def create_endpoint(api, persona, url: str, event_types: list[str]) -> dict:
    response = api(persona).post(
        f"/api/orgs/{persona.org.slug}/webhooks/endpoints/",
        {"url": url, "event_types": event_types},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def deliveries(status: str | None = None):
    rows = WebhookDelivery.objects.all()
    return rows.filter(status=status) if status else rows


def test_session_events_are_delivered_signed_per_the_spec(
    alice, api, receiver, allow_private, script, make_session, hooks_worker
):
    endpoint = create_endpoint(api, alice, receiver.url, ["session.created", "session.idle"])
    script_id = script.load([[{"text": "done"}]])

    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("go"))
    wait_idle(session)
    wait_for(lambda: receiver.of_type("session.idle"), what="the idle event delivered")

    created, idle = receiver.of_type("session.created")[0], receiver.of_type("session.idle")[0]
    for got in (created, idle):
        assert spec_verify(endpoint["secret"], got["headers"], got["body"])
        assert not spec_verify("whsec_" + base64.b64encode(b"x" * 32).decode(), got["headers"], got["body"])
        assert got["headers"]["content-type"] == "application/json"
    body = json.loads(idle["body"])
    assert body["type"] == "session.idle" and body["data"]["sessionID"] == session.pk
    assert body["data"]["projectID"] == alice.project.pk and body["timestamp"].endswith("Z")
    # Only the subscribed types, each once; the log holds the request and the response.
    assert sorted(json.loads(r["body"])["type"] for r in receiver.received) == [
        "session.created",
        "session.idle",
    ]
    delivery = WebhookDelivery.objects.get(event_type="session.idle")
    wait_for(lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == "succeeded", what="succeeded")
    [attempt] = WebhookAttempt.objects.filter(delivery=delivery)
    assert attempt.response_status == 200 and attempt.duration_ms > 0
    assert attempt.request_headers["webhook-id"] == idle["headers"]["webhook-id"] == delivery.message_id
    log = api(alice).get(f"/api/orgs/acme/webhooks/deliveries/?endpoint={endpoint['id']}").json()
    assert {d["event_type"] for d in log} == {"session.created", "session.idle"}
    assert all(d["attempt_log"][0]["response_status"] == 200 for d in log)


def test_a_failing_endpoint_is_retried_with_growing_delays_until_it_succeeds(
    alice, api, receiver, allow_private, hooks_worker
):
    create_endpoint(api, alice, receiver.url, ["session.created"])
    receiver.statuses = [500, 503]

    session_create(actor=alice.actor, project=alice.project)

    delivery = wait_for(lambda: deliveries("succeeded").first(), what="the delivery to succeed")
    assert delivery.attempts == 3
    assert [a.response_status for a in WebhookAttempt.objects.filter(delivery=delivery)] == [500, 503, 200]
    ids = {r["headers"]["webhook-id"] for r in receiver.received}
    assert ids == {delivery.message_id}  # the same message id on every retry, as the spec asks
    first, second, third = (r["at"] for r in receiver.received)
    # Base 0.3 s: the first wait is 0.15-0.3 s, the second 0.3-0.6 s (jitter: half to full).
    assert second - first > 0.1 and third - second > 0.25
    assert WebhookEndpoint.objects.get().failed_in_row == 0


def test_an_endpoint_failing_for_good_is_disabled_with_an_audit_row_and_a_reason(
    alice, api, receiver, allow_private, hooks_worker
):
    endpoint = create_endpoint(api, alice, receiver.url, ["session.created"])
    receiver.statuses = [500] * 100

    session_create(actor=alice.actor, project=alice.project)
    wait_for(lambda: deliveries("failed").count() == 1, what="the first delivery to fail for good")
    session_create(actor=alice.actor, project=alice.project)

    row = wait_for(lambda: WebhookEndpoint.objects.filter(enabled=False).first(), what="disabled")
    assert "2 deliveries in a row" in row.disabled_reason
    audit = AuditEvent.objects.get(action="webhook.endpoint.disabled")
    assert (
        audit.actor_type == "system"
        and audit.target_id == str(endpoint["id"])
        and audit.org_id == alice.org.pk
    )
    assert len(receiver.received) == 6  # 2 deliveries x 3 attempts, then nothing more
    session_create(actor=alice.actor, project=alice.project)
    time.sleep(1.0)  # a window for a delivery that must not come: nothing signals its absence
    assert len(receiver.received) == 6 and deliveries().count() == 2
    shown = api(alice).get(f"/api/orgs/acme/webhooks/endpoints/{endpoint['id']}").json()
    assert shown["enabled"] is False and shown["disabled_reason"] == row.disabled_reason


def test_a_failed_delivery_is_replayed_by_hand_with_its_original_id(
    alice, api, receiver, allow_private, hooks_worker
):
    create_endpoint(api, alice, receiver.url, ["session.created"])
    receiver.statuses = [500, 500, 500]
    session_create(actor=alice.actor, project=alice.project)
    failed = wait_for(lambda: deliveries("failed").first(), what="the delivery to fail")

    response = api(alice).post(f"/api/orgs/acme/webhooks/deliveries/{failed.pk}/replay")

    assert response.status_code == 202
    wait_for(lambda: deliveries("succeeded").filter(pk=failed.pk).exists(), what="the replay to succeed")
    last = WebhookAttempt.objects.filter(delivery=failed).last()
    assert last.manual and last.number == 4 and last.response_status == 200
    assert receiver.received[-1]["headers"]["webhook-id"] == failed.message_id
    assert receiver.received[-1]["body"] == receiver.received[0]["body"]
    assert AuditEvent.objects.filter(action="webhook.delivery.replay", target_id=str(failed.pk)).exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/hook",
        "http://[::1]/hook",
        "http://[::ffff:192.168.0.1]/hook",
        "ftp://example.com/hook",
    ],
)
def test_a_private_or_metadata_destination_is_refused_without_the_operator_setting(alice, api, url):
    response = api(alice).post(
        "/api/orgs/acme/webhooks/endpoints/", {"url": url, "event_types": ["session.idle"]}, format="json"
    )
    assert response.status_code == 400 and "url" in response.json()["error"]["fields"]
    assert not WebhookEndpoint.objects.exists()


def test_a_destination_that_became_private_is_refused_at_send_time(alice, api, receiver, settings):
    """The address is checked again (and pinned) at every send, not only when the endpoint is saved."""
    settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE = True
    create_endpoint(api, alice, receiver.url, ["session.created"])
    settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE = False
    from hangar.integrations.webhooks.outbound import deliveries_create

    session = session_create(actor=alice.actor, project=alice.project)
    [delivery_id] = deliveries_create(session.pk, list(session.events.values_list("id", flat=True)))

    assert delivery_attempt(delivery_id) is None  # refused: final, no retry
    attempt = WebhookAttempt.objects.get(delivery_id=delivery_id)
    assert attempt.error.startswith("refused:") and "127.0.0.1" in attempt.error
    assert receiver.received == []


def test_a_push_is_delivered_as_push_done(alice, api, receiver, allow_private):
    from hangar.conversations.events import publish
    from hangar.integrations.webhooks.outbound import deliveries_create

    create_endpoint(api, alice, receiver.url, ["push.done"])
    session = session_create(actor=alice.actor, project=alice.project)
    pushed = publish(
        session, "workspace.pushed", {"sessionID": session.pk, "branch": "hangar/x", "commit": "abc"}
    )

    [delivery_id] = deliveries_create(session.pk, [e.pk for e in session.events.all()])

    assert delivery_attempt(delivery_id) is None
    body = json.loads(receiver.received[0]["body"])
    assert body["type"] == "push.done" and body["data"]["branch"] == "hangar/x"
    assert WebhookDelivery.objects.get().source_event_id == pushed.pk


def test_endpoints_and_deliveries_are_tenant_scoped(alice, bob, charlie, api, receiver, allow_private):
    endpoint = create_endpoint(api, alice, receiver.url, ["session.created"])
    assert "secret" not in api(alice).get(f"/api/orgs/acme/webhooks/endpoints/{endpoint['id']}").json()
    from hangar.integrations.webhooks.outbound import deliveries_create

    session = session_create(actor=alice.actor, project=alice.project)
    [delivery_id] = deliveries_create(session.pk, list(session.events.values_list("id", flat=True)))
    for path in (f"endpoints/{endpoint['id']}", f"deliveries/{delivery_id}"):
        assert api(charlie).get(f"/api/orgs/globex/webhooks/{path}").status_code == 404
        assert api(charlie).get(f"/api/orgs/acme/webhooks/{path}").status_code == 404
    assert api(charlie).post(f"/api/orgs/globex/webhooks/deliveries/{delivery_id}/replay").status_code == 404
    assert (
        api(charlie)
        .patch(f"/api/orgs/globex/webhooks/endpoints/{endpoint['id']}", {"enabled": False}, format="json")
        .status_code
        == 404
    )
    assert api(charlie).get("/api/orgs/globex/webhooks/deliveries/").json() == []
    assert api(bob).post(f"/api/orgs/acme/webhooks/deliveries/{delivery_id}/replay").status_code == 403
    assert api(bob).get("/api/orgs/acme/webhooks/deliveries/").status_code == 200
    assert WebhookEndpoint.objects.get().enabled


def test_a_question_and_a_hard_budget_stop_are_delivered(alice, api, receiver, allow_private):
    import datetime as dt

    from hangar.conversations.budget_services import session_budget_blocked
    from hangar.conversations.question_services import question_request_create
    from hangar.integrations.webhooks.outbound import deliveries_create
    from hangar.usage.gate import BudgetState

    create_endpoint(api, alice, receiver.url, ["question.asked", "budget.reached"])
    session = session_create(actor=alice.actor, project=alice.project)
    question = [{"question": "Ship?", "header": "Ship", "options": [{"label": "Yes", "description": ""}]}]
    asked = question_request_create(session=session, questions=question, message_id="msg_1", call_id="c1")
    state = BudgetState(
        id=7,
        scope="org",
        period="day",
        hard_limit=1.0,
        soft_limit=None,
        alerted_for=None,
        project_id=None,
        user_id=None,
        spent=1.25,
        period_start=dt.date.today(),
    )
    session_budget_blocked(session=session, state=state)

    for delivery_id in deliveries_create(session.pk, [e.pk for e in session.events.all()]):
        assert delivery_attempt(delivery_id) is None
    bodies = {body["type"]: body["data"] for body in (json.loads(r["body"]) for r in receiver.received)}
    assert set(bodies) == {"question.asked", "budget.reached"}
    assert bodies["question.asked"]["id"] == asked.pk and bodies["question.asked"]["questions"] == question
    assert bodies["budget.reached"]["budget"]["spent"] == 1.25


def test_events_are_fanned_out_only_for_an_org_with_an_endpoint_that_wants_them(
    alice, api, receiver, allow_private
):
    from unittest import mock

    from hangar.conversations.events import publish

    session = session_create(actor=alice.actor, project=alice.project)
    with mock.patch("hangar.integrations.webhooks.enqueue.enqueue_fanout") as fanout:
        publish(session, "session.idle", {"sessionID": session.pk})
        assert fanout.call_count == 0  # no endpoint: no broker round trip per event
        create_endpoint(api, alice, receiver.url, ["push.done"])
        publish(session, "session.idle", {"sessionID": session.pk})
        assert fanout.call_count == 0  # an endpoint, but not for this type
        create_endpoint(api, alice, receiver.url, ["session.idle"])
        idle = publish(session, "session.idle", {"sessionID": session.pk})
        fanout.assert_called_once_with(session.pk, [idle.pk])
