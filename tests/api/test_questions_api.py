"""The agent's questions over /api (list, answer, reject): answers reach the store and restart the run,
bad answers are a 400 naming `answers`, and another org's question is a 404 on every route. The OpenCode
routes: tests/opencode/test_questions.py."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import QuestionRequest, Session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_enqueue")]


def api_url(persona, request, suffix=""):
    session = request.session
    return (
        f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/questions/{suffix}"
    )


def test_the_api_lists_then_answers_a_question_and_the_run_restarts(api, alice, bob, asked, no_enqueue):
    listed = api(bob).get(api_url(alice, asked))
    assert listed.status_code == 200 and [q["id"] for q in listed.json()] == [asked.pk]
    assert listed.json()[0]["tool"] == {"messageID": "msg_1", "callID": "call_1"}

    reply = api(bob).post(
        api_url(alice, asked, f"{asked.pk}/reply/"), {"answers": [["Yes"], ["lint", "tests"]]}, format="json"
    )
    assert reply.status_code == 200, reply.content
    assert reply.json() == {"id": asked.pk, "status": "answered"}
    asked.refresh_from_db()
    assert asked.answers == [["Yes"], ["lint", "tests"]] and asked.replied_by == bob.user
    assert Session.objects.get(pk=asked.session_id).run_requested
    assert AuditEvent.objects.filter(action="question.answered", target_id=asked.pk).count() == 1
    assert api(bob).get(api_url(alice, asked)).json() == []


def test_answers_that_do_not_fit_are_a_400_naming_answers(api, alice, asked):
    for body in ({"answers": [["Yes"]]}, {"answers": [["Yes", "No"], ["lint"]]}, {"answers": "Yes"}, {}):
        response = api(alice).post(api_url(alice, asked, f"{asked.pk}/reply/"), body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert "answers" in response.json()["error"]["fields"], response.content
    assert QuestionRequest.objects.get(pk=asked.pk).status == "pending"


def test_the_api_rejects_a_question(api, alice, asked):
    response = api(alice).post(api_url(alice, asked, f"{asked.pk}/reject/"))
    assert response.status_code == 200 and response.json()["status"] == "rejected"


def test_another_orgs_question_is_not_found_on_every_route(api, alice, charlie, asked):
    foreign = (
        f"/api/orgs/{charlie.org.slug}/projects/{charlie.project.pk}/sessions/{asked.session_id}/questions/"
    )
    assert api(charlie).get(foreign).status_code == 404
    body = {"answers": [["Yes"], ["lint"]]}
    assert api(charlie).post(f"{foreign}{asked.pk}/reply/", body, format="json").status_code == 404
    assert api(charlie).post(f"{foreign}{asked.pk}/reject/").status_code == 404
    assert api(charlie).get(api_url(alice, asked)).status_code == 404
    assert QuestionRequest.objects.get(pk=asked.pk).status == "pending"
