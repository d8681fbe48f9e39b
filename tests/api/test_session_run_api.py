"""Driving a session through /api (prompt, abort, permission replies, todos, agents): the same engine
services as the OpenCode routes, org-scoped, with a cross-tenant 404 on every route."""

from unittest import mock

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Message, PermissionGrant, PermissionRequest, Session
from hangar.conversations.permission_services import permission_request_create
from hangar.conversations.services import session_create

pytestmark = pytest.mark.django_db
BODY = {"parts": [{"type": "text", "text": "hi"}]}


def url(persona, session, suffix: str) -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/{suffix}"


@pytest.fixture
def alices_session(alice):
    alice.project.default_model = "openai/gpt-4o-mini"
    alice.project.save()
    return session_create(actor=alice.actor, project=alice.project, title="t")


@pytest.fixture
def asked(alices_session):
    return permission_request_create(
        session=alices_session,
        permission="bash",
        patterns=["rm -rf build"],
        always=["rm *"],
        metadata={"command": "rm -rf build"},
    )


@pytest.fixture
def no_enqueue():
    with mock.patch("hangar.engine.services.enqueue_run") as enqueue:
        yield enqueue


def test_a_prompt_is_stored_audited_and_starts_the_run(api, alice, alices_session, no_enqueue):
    response = api(alice).post(url(alice, alices_session, "prompt/"), BODY, format="json")
    assert response.status_code == 202, response.content
    message = Message.objects.get(pk=response.json()["message"])
    assert response.json()["queued"] is False
    assert message.session_id == alices_session.pk and message.data["role"] == "user"
    assert AuditEvent.objects.filter(action="session.prompt", target_id=alices_session.pk).count() == 1
    assert Session.objects.get(pk=alices_session.pk).status == "busy"


def test_a_prompt_to_a_busy_session_says_it_is_queued(api, alice, alices_session, no_enqueue):
    api(alice).post(url(alice, alices_session, "prompt/"), BODY, format="json")
    second = api(alice).post(url(alice, alices_session, "prompt/"), BODY, format="json")
    assert second.status_code == 202 and second.json()["queued"] is True


def test_a_prompt_with_an_agent_and_a_model_string_sets_them_on_the_session(
    api, alice, alices_session, no_enqueue
):
    body = {**BODY, "agent": "plan", "model": "openai/gpt-4.1"}
    assert api(alice).post(url(alice, alices_session, "prompt/"), body, format="json").status_code == 202
    session = Session.objects.get(pk=alices_session.pk)
    assert session.agent == "plan" and session.model == {"providerID": "openai", "modelID": "gpt-4.1"}


def test_an_empty_or_malformed_prompt_is_a_400_and_stores_nothing(api, alice, alices_session, no_enqueue):
    for body in ({"parts": []}, {"parts": [{"type": "text"}]}, {"parts": [{"type": "tool"}]}):
        response = api(alice).post(url(alice, alices_session, "prompt/"), body, format="json")
        assert response.status_code == 400, body
    assert not Message.objects.filter(session=alices_session).exists()


def test_a_prompt_without_any_model_is_a_400(api, alice, no_enqueue):
    session = session_create(actor=alice.actor, project=alice.project, title="t")  # no default model
    response = api(alice).post(url(alice, session, "prompt/"), BODY, format="json")
    assert response.status_code == 400 and "model" in str(response.json())


def test_a_viewer_cannot_prompt_abort_or_reply(api, dave, alice, alices_session, asked, no_enqueue):
    client = api(dave)
    assert client.post(url(dave, alices_session, "prompt/"), BODY, format="json").status_code == 403
    assert client.post(url(dave, alices_session, "abort/")).status_code == 403
    reply = url(dave, alices_session, f"permissions/{asked.pk}/reply/")
    assert client.post(reply, {"reply": "once"}, format="json").status_code == 403
    assert client.get(url(dave, alices_session, "permissions/")).status_code == 200  # reading is fine


def test_abort_flags_the_session_and_audits(api, alice, alices_session, no_enqueue):
    assert api(alice).post(url(alice, alices_session, "abort/")).status_code == 204
    assert Session.objects.get(pk=alices_session.pk).abort_requested
    assert AuditEvent.objects.filter(action="session.abort", target_id=alices_session.pk).exists()


def test_pending_permissions_are_listed_in_opencodes_shape(api, alice, alices_session, asked):
    response = api(alice).get(url(alice, alices_session, "permissions/"))
    assert response.status_code == 200
    assert response.json() == [
        {
            "id": asked.pk,
            "sessionID": alices_session.pk,
            "permission": "bash",
            "patterns": ["rm -rf build"],
            "metadata": {"command": "rm -rf build"},
            "always": ["rm *"],
        }
    ]


def test_reject_with_a_message_is_stored_for_the_model(
    api, alice, alices_session, asked, no_enqueue, django_capture_on_commit_callbacks
):
    body = {"reply": "reject", "message": "use make clean"}
    with django_capture_on_commit_callbacks(execute=True):
        response = api(alice).post(
            url(alice, alices_session, f"permissions/{asked.pk}/reply/"), body, format="json"
        )
    assert response.status_code == 200 and response.json() == {"id": asked.pk, "status": "reject"}
    asked.refresh_from_db()
    assert asked.reply_message == "use make clean"
    assert api(alice).get(url(alice, alices_session, "permissions/")).json() == []
    no_enqueue.assert_called_once_with(alices_session.pk)


def test_always_with_project_scope_stores_a_project_grant_per_pattern(
    api, alice, alices_session, asked, no_enqueue
):
    body = {"reply": "always", "scope": "project"}
    response = api(alice).post(
        url(alice, alices_session, f"permissions/{asked.pk}/reply/"), body, format="json"
    )
    assert response.status_code == 200
    grant = PermissionGrant.objects.get(project=alice.project)
    assert (grant.scope, grant.session_id, grant.pattern) == ("project", None, "rm *")


def test_a_second_reply_does_not_change_the_first(api, alice, alices_session, asked, no_enqueue):
    reply = url(alice, alices_session, f"permissions/{asked.pk}/reply/")
    api(alice).post(reply, {"reply": "once"}, format="json")
    again = api(alice).post(reply, {"reply": "reject"}, format="json")
    assert again.json()["status"] == "once"


def test_a_request_of_another_session_is_not_found_through_this_one(
    api, alice, alices_session, asked, no_enqueue
):
    other = session_create(actor=alice.actor, project=alice.project, title="other")
    response = api(alice).post(
        url(alice, other, f"permissions/{asked.pk}/reply/"), {"reply": "once"}, format="json"
    )
    assert response.status_code == 404
    assert PermissionRequest.objects.get(pk=asked.pk).status == "pending"


def test_todos_and_agents_are_readable(api, alice, alices_session):
    alices_session.todos.create(content="write tests", status="pending", priority="high", position=0)
    todos = api(alice).get(url(alice, alices_session, "todos/"))
    assert todos.json() == [{"content": "write tests", "status": "pending", "priority": "high"}]
    agents = api(alice).get(f"/api/orgs/acme/projects/{alice.project.pk}/agents/").json()
    assert {"build", "plan"} <= {a["name"] for a in agents}
    assert "title" not in {a["name"] for a in agents}  # hidden agents are not offered


def test_charlie_gets_404_on_every_route_of_alices_session(
    api, alice, charlie, alices_session, asked, no_enqueue
):
    client = api(charlie)
    for org, project in (("acme", alice.project.pk), ("globex", charlie.project.pk)):
        base = f"/api/orgs/{org}/projects/{project}/sessions/{alices_session.pk}/"
        assert client.post(base + "prompt/", BODY, format="json").status_code == 404
        assert client.post(base + "abort/").status_code == 404
        assert client.get(base + "todos/").status_code == 404
        assert client.get(base + "permissions/").status_code == 404
        reply = client.post(base + f"permissions/{asked.pk}/reply/", {"reply": "once"}, format="json")
        assert reply.status_code == 404
    assert client.get(f"/api/orgs/acme/projects/{alice.project.pk}/agents/").status_code == 404
    assert not Message.objects.filter(session=alices_session).exists()
    assert PermissionRequest.objects.get(pk=asked.pk).status == "pending"
    assert not Session.objects.get(pk=alices_session.pk).abort_requested
