"""The `question` tool in the loop (fast tier): asking parks the run without holding a worker, an answer
resumes the waiting call with the answers for the model, a rejection stops the turn, an abort rejects it."""

from __future__ import annotations

import pytest

from hangar.conversations.models import Event, Message, Part, QuestionRequest, Session
from hangar.engine.reply_services import question_reject, question_reply
from hangar.engine.services import session_abort
from tests.engine.fast.scripted_model import ScriptedModel, call

pytestmark = [pytest.mark.fast, pytest.mark.django_db]
ASK = {
    "questions": [
        {
            "question": "Which database should the service use?",
            "header": "Database",
            "options": [
                {"label": "Postgres (Recommended)", "description": "what the team runs"},
                {"label": "SQLite", "description": "no server"},
            ],
        }
    ]
}


def asked_turn(rig) -> tuple[ScriptedModel, QuestionRequest]:
    rig.prompt("set up storage")
    model = ScriptedModel([[call("question", "c1", **ASK)], [{"text": "going with it"}]])
    rig.run(model)
    return model, QuestionRequest.objects.get(session=rig.session)


def test_a_question_parks_the_run_and_announces_itself_in_opencodes_shape(rig):
    _, request = asked_turn(rig)
    assert request.status == "pending" and request.call_id == "c1"
    assert rig.state().status == "busy"
    part = rig.parts("tool")[0]
    assert part["state"]["status"] == "running" and part["metadata"]["awaiting"] == request.pk
    (event,) = Event.objects.filter(session_id=rig.session.pk, type="question.asked")
    assert event.payload == {
        "id": request.pk,
        "sessionID": rig.session.pk,
        "questions": ASK["questions"],
        "tool": {"messageID": part["messageID"], "callID": "c1"},
    }


def test_an_answer_resumes_the_waiting_call_with_the_answers_for_the_model(rig, alice):
    model, request = asked_turn(rig)
    question_reply(actor=alice.actor, request=request, answers=[["Postgres (Recommended)"]])
    rig.run(model)

    part = rig.parts("tool")[0]
    assert part["state"]["status"] == "completed"
    assert part["state"]["output"] == (
        'User has answered your questions: "Which database should the service use?"="Postgres (Recommended)". '
        "You can now continue with the user's answers in mind."
    )
    assert part["state"]["metadata"] == {"answers": [["Postgres (Recommended)"]]}
    assert rig.state().status == "idle" and len(model.requests) == 2
    replied = Event.objects.get(session_id=rig.session.pk, type="question.replied").payload
    assert replied == {
        "sessionID": rig.session.pk,
        "requestID": request.pk,
        "answers": [["Postgres (Recommended)"]],
    }


def test_a_rejected_question_fails_the_call_and_stops_the_turn(rig, alice):
    model, request = asked_turn(rig)
    question_reject(actor=alice.actor, request=request)
    rig.run(model)

    part = rig.parts("tool")[0]
    # OpenCode 1.18.33's text exactly, and its finish: the step's own ("tool-calls"), not "stop".
    assert part["state"]["status"] == "error"
    assert part["state"]["error"] == "The user dismissed this question"
    (message,) = rig.assistants()
    assert message["finish"] == "tool-calls"
    assert rig.state().status == "idle" and len(model.requests) == 1
    assert Event.objects.filter(session_id=rig.session.pk, type="question.rejected").count() == 1


def test_answers_that_do_not_fit_the_questions_are_refused_and_change_nothing(rig, alice):
    from hangar.engine.reply_services import AnswersRejected

    _, request = asked_turn(rig)
    for bad in ([], [["a"], ["b"]], [["Postgres", "SQLite"]], [[""]], "Postgres"):
        with pytest.raises(AnswersRejected):
            question_reply(actor=alice.actor, request=request, answers=bad)
    request.refresh_from_db()
    assert request.status == "pending" and request.answers is None


def test_an_abort_rejects_the_pending_question(rig, alice):
    model, request = asked_turn(rig)
    session_abort(actor=alice.actor, session=rig.session)
    rig.run(model)
    request.refresh_from_db()
    assert request.status == "rejected" and rig.state().status == "idle"


def _plan_turn(rig, alice, tool: str, agent: str) -> tuple[ScriptedModel, QuestionRequest]:
    rig.prompt("design the storage layer")
    Session.objects.filter(pk=rig.session.pk).update(agent=agent)
    Message.objects.filter(session=rig.session, role="user").update(data={**_user(rig), "agent": agent})
    model = ScriptedModel([[call(tool, "c1")], [{"text": "on it"}]])
    rig.run(model)
    return model, QuestionRequest.objects.get(session=rig.session)


def _user(rig) -> dict:
    return Message.objects.get(session=rig.session, role="user").data


@pytest.mark.parametrize(
    ("tool", "start", "target"), [("plan_exit", "plan", "build"), ("plan_enter", "build", "plan")]
)
def test_an_approved_switch_continues_the_turn_as_the_other_agent(rig, alice, tool, start, target):
    (rig.sandbox.root / "workspace/.opencode/plans").mkdir(parents=True)
    (rig.sandbox.root / "workspace/.opencode/plans/storage.md").write_text("# Plan\n")
    model, request = _plan_turn(rig, alice, tool, start)
    assert request.questions[0]["options"][0]["label"] == "Yes"

    question_reply(actor=alice.actor, request=request, answers=[["Yes"]])
    rig.run(model)
    users = list(Message.objects.filter(session=rig.session, role="user").order_by("id"))
    assert [u.data["agent"] for u in users] == [start, target]
    synthetic = Part.objects.get(message=users[1]).data
    assert synthetic["synthetic"] is True
    if tool == "plan_exit":
        assert "/workspace/.opencode/plans/storage.md has been approved" in synthetic["text"]
    assert [m["agent"] for m in rig.assistants()] == [start, target]
    assert rig.state().agent == target and rig.state().status == "idle"


def test_a_declined_switch_stops_the_turn_and_keeps_the_agent(rig, alice):
    model, request = _plan_turn(rig, alice, "plan_exit", "plan")
    question_reply(actor=alice.actor, request=request, answers=[["No"]])
    rig.run(model)
    assert rig.parts("tool")[0]["state"]["status"] == "error"
    assert Message.objects.filter(session=rig.session, role="user").count() == 1
    assert rig.state().agent == "plan" and len(model.requests) == 1
