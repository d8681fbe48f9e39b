"""OpenCode's question routes (GET /question, POST /question/{id}/reply and /reject) in its shapes, and
another org's question a 404 on every one."""

import pytest

from hangar.conversations.models import QuestionRequest
from hangar.conversations.question_services import question_request_create
from tests.opencode.conftest import assert_response, base_url
from tests.question_fixtures import QUESTIONS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_enqueue")]


def test_opencodes_routes_list_reply_and_reject(oc, alice, asked):
    base = base_url(alice)
    listed = oc(alice).get(f"{base}/question")
    assert_response(listed, "/question")
    assert [q["id"] for q in listed.json()] == [asked.pk]
    replied = oc(alice).post(
        f"{base}/question/{asked.pk}/reply", {"answers": [["Yes"], ["tests"]]}, format="json"
    )
    assert_response(replied, "/question/{requestID}/reply", "post")
    assert replied.json() is True
    assert QuestionRequest.objects.get(pk=asked.pk).answers == [["Yes"], ["tests"]]
    other = question_request_create(
        session=asked.session, questions=QUESTIONS, message_id="msg_2", call_id="c2"
    )
    rejected = oc(alice).post(f"{base}/question/{other.pk}/reject", {}, format="json")
    assert rejected.status_code == 200 and QuestionRequest.objects.get(pk=other.pk).status == "rejected"
    missing = oc(alice).post(f"{base}/question/que_nope/reject", {}, format="json")
    assert missing.status_code == 404 and missing.json()["_tag"] == "QuestionNotFoundError"


def test_another_orgs_question_is_not_found_on_every_route(oc, alice, charlie, asked):
    theirs = base_url(charlie)
    assert oc(charlie).get(f"{theirs}/question").json() == []
    body = {"answers": [["Yes"], ["lint"]]}
    assert oc(charlie).post(f"{theirs}/question/{asked.pk}/reply", body, format="json").status_code == 404
    assert oc(charlie).post(f"{theirs}/question/{asked.pk}/reject", {}, format="json").status_code == 404
    assert oc(charlie).get(f"{base_url(alice)}/question").status_code == 404
    assert QuestionRequest.objects.get(pk=asked.pk).status == "pending"
