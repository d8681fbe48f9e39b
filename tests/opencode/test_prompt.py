"""POST /session/{id}/prompt_async: what one prompt costs and guarantees. The message is stored with its
parts, audited in the same transaction, the session flagged busy with a run requested, and the run
enqueued only once that commits; the caller's role and tenancy are checked once, on the way in."""

import base64
import json
import uuid
from unittest import mock

import pytest
import redis

from hangar.accounts.models import Membership, Role
from hangar.audit.models import AuditEvent
from hangar.conversations.models import Message, Session
from hangar.conversations.services import session_create
from hangar.projects.models import Project
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db
BODY = {"parts": [{"type": "text", "text": "hi"}]}


@pytest.fixture
def alices_session(alice):
    alice.project.default_model = "openai/gpt-4o-mini"
    alice.project.save()
    return session_create(actor=alice.actor, project=alice.project, title="t")


def prompt(client, persona, session, body=BODY):
    return client.post(f"{base_url(persona)}/session/{session.pk}/prompt_async", body, format="json")


def test_it_stores_audits_flags_and_enqueues_after_commit(
    oc, alice, alices_session, django_capture_on_commit_callbacks
):
    with mock.patch("hangar.engine.services.enqueue_run") as enqueue:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert prompt(oc(alice), alice, alices_session).status_code == 204
            enqueue.assert_not_called()  # not before the commit
        for callback in callbacks:
            callback()
    enqueue.assert_called_once_with(alices_session.pk)
    message = Message.objects.get(session=alices_session, role="user")
    assert [part.data["text"] for part in message.parts.all()] == ["hi"]
    assert AuditEvent.objects.filter(action="session.prompt", target_id=alices_session.pk).count() == 1
    session = Session.objects.get(pk=alices_session.pk)
    assert session.status == "busy" and session.run_requested


def test_the_prompts_agent_and_model_become_the_sessions(oc, alice, alices_session):
    body = {**BODY, "agent": "plan", "model": {"providerID": "openai", "modelID": "gpt-4.1"}}
    with mock.patch("hangar.engine.services.enqueue_run"):
        assert prompt(oc(alice), alice, alices_session, body).status_code == 204
    session = Session.objects.get(pk=alices_session.pk)
    assert session.agent == "plan" and session.model == {"providerID": "openai", "modelID": "gpt-4.1"}


@pytest.mark.parametrize(
    "body",
    [BODY, {**BODY, "agent": "plan", "model": {"providerID": "o", "modelID": "m"}}],
    ids=["same", "new-agent-and-model"],
)
def test_a_prompt_is_eight_queries(oc, alice, alices_session, body, django_assert_num_queries):
    # The token with its user, membership and project; the session; then BEGIN, the message with its parts,
    # the audit row, the busy status, the run flag (with any agent/model change), COMMIT. The membership is
    # not read again by the engine's role check.
    # The project's secret values, which mask the prompt's text, are read once per process and policy
    # stamp (secret_env.masker_for): one more query on a project's first prompt, none after.
    from hangar.engine.agents.secret_env import masker_for

    client = oc(alice)
    client.get(f"{base_url(alice)}/config")  # stamps last_used_at (at most once a minute)
    masker_for(alice.project)
    with mock.patch("hangar.engine.services.enqueue_run"), django_assert_num_queries(8):
        assert prompt(client, alice, alices_session, body).status_code == 204


def test_a_session_of_another_project_of_the_same_org_is_not_found(oc, alice, alices_session):
    other = Project.objects.create(org=alice.org, name="other", slug="other")
    response = oc(alice).post(
        f"{base_url(other)}/session/{alices_session.pk}/prompt_async", BODY, format="json"
    )
    assert response.status_code == 404 and response.json()["name"] == "NotFoundError"
    assert not Message.objects.filter(session=alices_session).exists()


def test_another_orgs_token_cannot_prompt_even_as_a_member_of_both(oc, alice, charlie, alices_session):
    Membership.objects.create(org=alice.org, user=charlie.user, role=Role.OWNER)
    assert prompt(oc(charlie), alice, alices_session).status_code == 404
    assert not Message.objects.filter(session=alices_session).exists()


def test_a_member_who_left_cannot_prompt(oc, alice, bob, alices_session):
    Membership.objects.filter(user=bob.user).delete()
    assert prompt(oc(bob), alice, alices_session).status_code == 404
    assert not Message.objects.filter(session=alices_session).exists()


def test_the_run_is_sent_to_the_engine_queue_naming_the_session(monkeypatch, settings):
    from hangar.engine.services import enqueue_run

    queue = f"test-enqueue-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HANGAR_ENGINE_QUEUE", queue)
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        enqueue_run("ses_abc")
        message = json.loads(client.lpop(queue))
    finally:
        client.delete(queue)
    assert message["headers"]["task"] == "hangar.engine.run_session"
    assert json.loads(base64.b64decode(message["body"]))[0] == ["ses_abc"]
