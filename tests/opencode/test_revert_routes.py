"""The file-history routes' refusals, on /oc and /api alike: a foreign session is a 404 on every route
(and nothing is touched), a busy session a 409 (OpenCode's SessionBusyError), a message not of the session
a 404, a bad body a 400. And the cleanup a prompt does after a revert, part by part. None of these reach a
sandbox: the end-to-end file work is tests/opencode/test_revert_fork.py."""

import pytest

from hangar.conversations import services as store
from hangar.conversations.models import Event, Message, Part, Session
from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_prompt
from tests.opencode.conftest import assert_matches, assert_response, base_url, schema_of

pytestmark = pytest.mark.django_db

MODEL = {"providerID": "openai", "modelID": "gpt-4o-mini"}
ROUTES = [("post", "revert"), ("post", "unrevert"), ("post", "fork"), ("get", "diff")]


@pytest.fixture
def history(alice):
    """alice's session with one answered prompt: user, assistant (text, text)."""
    session = session_create(actor=alice.actor, project=alice.project, title="t", model=MODEL)
    user = store.message_create(
        session=session,
        data={"role": "user", "time": {"created": 1}, "agent": "build", "model": MODEL},
        parts=[{"type": "text", "text": "hi"}],
    )
    assistant = store.message_create(
        session=session,
        data={
            "role": "assistant",
            "time": {"created": 2, "completed": 3},
            "parentID": user.pk,
            "modelID": MODEL["modelID"],
            "providerID": MODEL["providerID"],
            "mode": "build",
            "agent": "build",
            "path": {"cwd": "/workspace", "root": "/workspace"},
            "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "finish": "stop",
        },
        parts=[{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
    )
    return session, user, assistant


def oc_url(persona, session, route):
    return f"{base_url(persona)}/session/{session.pk}/{route}"


def api_url(org, project, session, route):
    return f"/api/orgs/{org}/projects/{project}/sessions/{session.pk}/{route}/"


def body(route, message):
    return {"messageID": message.pk} if route in ("revert", "fork") else {}


def test_every_route_is_a_404_across_tenants_and_touches_nothing(oc, api, alice, charlie, history):
    session, user, _ = history
    sessions_before = Session.objects.count()
    for method, route in ROUTES:
        for client_base in (base_url(alice), base_url(charlie)):
            url = f"{client_base}/session/{session.pk}/{route}"
            response = getattr(oc(charlie), method)(url, body(route, user), format="json")
            assert response.status_code == 404, (route, response.content)
        for org, project in (("acme", alice.project.pk), ("globex", charlie.project.pk)):
            url = api_url(org, project, session, route)
            response = getattr(api(charlie), method)(url, body(route, user), format="json")
            assert response.status_code == 404, (route, response.content)
    assert Session.objects.count() == sessions_before
    assert Session.objects.get(pk=session.pk).revert is None


def test_a_busy_session_is_refused_with_opencodes_session_busy_error(oc, api, alice, history):
    session, user, _ = history
    Session.objects.filter(pk=session.pk).update(status="busy")
    for route in ("revert", "unrevert"):
        response = oc(alice).post(oc_url(alice, session, route), body(route, user), format="json")
        assert_response(response, f"/session/{{sessionID}}/{route}", "post", status=409)
        assert response.json()["sessionID"] == session.pk
        response = api(alice).post(
            api_url("acme", alice.project.pk, session, route), body(route, user), format="json"
        )
        assert response.status_code == 409 and response.json()["error"]["code"] == "session_busy"


def test_a_message_of_another_session_is_a_404_and_a_bad_body_a_400(oc, api, alice, history):
    session, _, _ = history
    other = session_create(actor=alice.actor, project=alice.project, title="other", model=MODEL)
    foreign = store.message_create(
        session=other,
        data={"role": "user", "time": {"created": 1}, "agent": "build", "model": MODEL},
        parts=[{"type": "text", "text": "elsewhere"}],
    )
    for route in ("revert", "fork"):
        response = oc(alice).post(oc_url(alice, session, route), {"messageID": foreign.pk}, format="json")
        assert response.status_code == 404 and response.json()["name"] == "NotFoundError", route
        response = api(alice).post(
            api_url("acme", alice.project.pk, session, route), {"messageID": foreign.pk}, format="json"
        )
        assert response.status_code == 404, route
    response = oc(alice).get(oc_url(alice, session, "diff"), {"messageID": foreign.pk})
    assert response.status_code == 404
    for bad in ({}, {"messageID": "nope"}, {"messageID": foreign.pk, "extra": 1}):
        response = oc(alice).post(oc_url(alice, session, "revert"), bad, format="json")
        assert response.status_code == 400, bad
    response = api(alice).post(api_url("acme", alice.project.pk, session, "revert"), {}, format="json")
    assert response.status_code == 400 and "messageID" in response.json()["error"]["fields"]


def test_unrevert_and_diff_of_an_untouched_session_answer_as_it_is(oc, api, alice, history):
    session, user, _ = history
    response = oc(alice).post(oc_url(alice, session, "unrevert"))
    assert_response(response, "/session/{sessionID}/unrevert", "post")
    assert "revert" not in response.json()
    response = oc(alice).get(oc_url(alice, session, "diff"))
    assert_response(response, "/session/{sessionID}/diff")
    assert response.json() == []
    response = api(alice).get(api_url("acme", alice.project.pk, session, "diff"), {"messageID": user.pk})
    assert response.status_code == 200 and response.json() == []


def test_a_fork_of_a_session_that_never_ran_copies_its_history(oc, alice, history):
    session, user, _ = history
    response = oc(alice).post(oc_url(alice, session, "fork"), {}, format="json")
    assert_response(response, "/session/{sessionID}/fork", "post")
    forked = response.json()
    assert forked["title"] == "t (fork #1)"
    copied = list(Message.objects.filter(session_id=forked["id"]).order_by("id"))
    assert [m.role for m in copied] == ["user", "assistant"]
    assert copied[1].data["parentID"] == copied[0].pk != user.pk
    for message in copied:
        assert_matches(
            message.data, schema_of("UserMessage" if message.role == "user" else "AssistantMessage")
        )
    again = oc(alice).post(f"{base_url(alice)}/session/{forked['id']}/fork", {}, format="json").json()
    assert again["title"] == "t (fork #2)"


def test_the_next_prompt_after_a_revert_to_a_part_drops_that_part_on(alice, history, no_enqueue):
    session, _, assistant = history
    one, two = Part.objects.filter(message=assistant).order_by("id")
    Session.objects.filter(pk=session.pk).update(revert={"messageID": assistant.pk, "partID": two.pk})
    session = Session.objects.get(pk=session.pk)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("again"))
    assert Session.objects.get(pk=session.pk).revert is None
    assert list(Part.objects.filter(message=assistant).values_list("pk", flat=True)) == [one.pk]
    removed = Event.objects.get(session=session, type="message.part.removed").payload
    assert removed == {"sessionID": session.pk, "messageID": assistant.pk, "partID": two.pk}
    assert Message.objects.filter(session=session).count() == 3  # user, assistant, the new prompt
