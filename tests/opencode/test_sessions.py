"""Session routes answer with OpenCode's shapes and never reveal another org's sessions."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Session
from hangar.conversations.services import message_create, part_upsert, session_create, todos_replace
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def alices_session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="Rocket work")


def test_creating_a_session_returns_opencode_session_json(oc, alice):
    body = {"title": "hello", "permission": [{"permission": "question", "action": "deny", "pattern": "*"}]}
    response = oc(alice).post(f"{base_url(alice)}/session", body, format="json")
    assert_response(response, "/session", "post")
    session = Session.objects.get(pk=response.json()["id"])
    assert session.project_id == alice.project.pk and session.title == "hello"
    assert session.permission == body["permission"]
    assert AuditEvent.objects.filter(action="session.create", target_id=session.pk).exists()


def test_creating_a_session_accepts_an_empty_body_and_a_model(oc, alice):
    assert_response(oc(alice).post(f"{base_url(alice)}/session", format="json"), "/session", "post")
    response = oc(alice).post(
        f"{base_url(alice)}/session", {"model": {"id": "m1", "providerID": "p1"}}, format="json"
    )
    assert response.json()["model"] == {"id": "m1", "providerID": "p1"}


def test_creating_a_session_rejects_unknown_fields_naming_them(oc, alice):
    response = oc(alice).post(f"{base_url(alice)}/session", {"bogus": 1}, format="json")
    assert response.status_code == 400
    assert "bogus" in response.json()["data"]["errors"]


def test_listing_sessions_shows_only_the_projects_sessions(oc, alice, bob, charlie, alices_session):
    session_create(actor=charlie.actor, project=charlie.project)
    response = oc(bob).get(f"{base_url(alice)}/session")
    assert_response(response, "/session")
    assert [s["id"] for s in response.json()] == [alices_session.pk]


def test_getting_a_session(oc, alice, alices_session):
    response = oc(alice).get(f"{base_url(alice)}/session/{alices_session.pk}")
    assert_response(response, "/session/{sessionID}")
    assert response.json()["title"] == "Rocket work"


def test_renaming_and_archiving_a_session(oc, alice, alices_session):
    response = oc(alice).patch(
        f"{base_url(alice)}/session/{alices_session.pk}",
        {"title": "Renamed", "time": {"archived": 1795316638106}},
        format="json",
    )
    assert_response(response, "/session/{sessionID}", "patch")
    assert response.json()["title"] == "Renamed"
    assert response.json()["time"]["archived"] == 1795316638106
    assert AuditEvent.objects.filter(action="session.update", target_id=alices_session.pk).exists()


def test_deleting_a_session(oc, alice, alices_session):
    response = oc(alice).delete(f"{base_url(alice)}/session/{alices_session.pk}")
    assert response.status_code == 200 and response.json() is True
    assert not Session.objects.filter(pk=alices_session.pk).exists()
    assert AuditEvent.objects.filter(action="session.delete", target_id=alices_session.pk).exists()


def test_a_member_cannot_delete_someone_elses_session_through_the_protocol(oc, alice, bob, alices_session):
    response = oc(bob).delete(f"{base_url(alice)}/session/{alices_session.pk}")
    assert response.status_code == 403
    assert Session.objects.filter(pk=alices_session.pk).exists()


def test_a_missing_session_is_opencodes_not_found(oc, alice):
    response = oc(alice).get(f"{base_url(alice)}/session/ses_nope")
    assert_response(response, "/session/{sessionID}", "get", 404)


def test_messages_are_listed_as_info_and_parts(oc, alice, alices_session):
    user = message_create(
        session=alices_session,
        data={
            "role": "user",
            "time": {"created": 1},
            "agent": "build",
            "model": {"providerID": "p", "modelID": "m"},
        },
    )
    part_upsert(message=user, data={"type": "text", "text": "hi"})
    response = oc(alice).get(f"{base_url(alice)}/session/{alices_session.pk}/message")
    assert_response(response, "/session/{sessionID}/message")
    assert response.json()[0]["parts"][0]["text"] == "hi"
    one = oc(alice).get(f"{base_url(alice)}/session/{alices_session.pk}/message/{user.pk}")
    assert_response(one, "/session/{sessionID}/message/{messageID}")


def test_todos_are_listed_in_order(oc, alice, alices_session):
    todos_replace(session=alices_session, todos=[{"content": "a", "status": "completed"}, {"content": "b"}])
    response = oc(alice).get(f"{base_url(alice)}/session/{alices_session.pk}/todo")
    assert_response(response, "/session/{sessionID}/todo")
    assert [t["content"] for t in response.json()] == ["a", "b"]


def test_session_status_lists_busy_sessions(oc, alice, alices_session):
    Session.objects.filter(pk=alices_session.pk).update(status="busy")
    response = oc(alice).get(f"{base_url(alice)}/session/status")
    assert_response(response, "/session/status")
    assert response.json() == {alices_session.pk: {"type": "busy"}}


SESSION_ROUTES = [
    ("get", ""),
    ("patch", ""),
    ("delete", ""),
    ("get", "/message"),
    ("post", "/message"),
    ("get", "/todo"),
    ("post", "/prompt_async"),
    ("post", "/abort"),
    ("post", "/summarize"),
    ("get", "/children"),
    ("post", "/permissions/per_x"),
    ("get", "/message/msg_x"),
]


@pytest.mark.parametrize("method,suffix", SESSION_ROUTES)
def test_another_org_cannot_reach_alices_session_on_any_route(
    oc, alice, charlie, alices_session, method, suffix
):
    body = {"parts": [{"type": "text", "text": "hi"}]} if "message" in suffix or "prompt" in suffix else {}
    # On alice's base URL, charlie's token is refused before any session lookup...
    on_alices = getattr(oc(charlie), method)(
        f"{base_url(alice)}/session/{alices_session.pk}{suffix}", body, format="json"
    )
    assert on_alices.status_code == 404
    # ...and on charlie's own base URL, alice's session id does not exist.
    on_his = getattr(oc(charlie), method)(
        f"{base_url(charlie)}/session/{alices_session.pk}{suffix}", body, format="json"
    )
    assert on_his.status_code == 404
    assert on_his.json()["name"] == "NotFoundError"
    assert Session.objects.filter(pk=alices_session.pk).exists()


def test_a_missing_message_is_opencodes_not_found(oc, alice, alices_session):
    response = oc(alice).get(f"{base_url(alice)}/session/{alices_session.pk}/message/msg_nope")
    assert response.status_code == 404
    assert response.json()["name"] == "NotFoundError"
