"""The agent's `question` tool in the browser: the pending question shows inline with its options, the
person answers (options, several where allowed, their own words) and the run goes on with the answers;
dismissing it stops the turn."""

import json

import pytest

from hangar.conversations.models import Part, QuestionRequest
from tests.web.test_steering import start_session

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = [
    {
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "what the rest of the platform runs"},
            {"label": "SQLite", "description": "a file, no server"},
        ],
    },
    {
        "question": "Which checks should run before merging?",
        "header": "Checks",
        "options": [
            {"label": "lint", "description": "ruff"},
            {"label": "tests", "description": "pytest"},
            {"label": "types", "description": "mypy"},
        ],
        "multiple": True,
    },
]


def ask(call_id: str) -> dict:
    return {"tool_calls": [{"name": "question", "id": call_id, "arguments": {"questions": QUESTIONS}}]}


def use(persona, script, scripted_credential, turns) -> str:
    scripted_credential(persona)
    script_id = script.load(turns)
    persona.project.default_model = f"scripted/{script_id}"
    persona.project.save()
    return script_id


def test_alice_answers_the_agents_questions_and_the_run_goes_on_with_them(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    script_id = use(alice, script, scripted_credential, [[ask("q1")], [{"text": "Postgres it is."}]])
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made, "set up the service")
    card = page.get_by_role("alert", name="Question from the agent: 2 questions")
    card.get_by_text("Which database should the service use?").wait_for(timeout=60_000)
    app.shot("question")
    send = card.get_by_role("button", name="Send answers")
    assert send.is_disabled()  # nothing chosen yet
    card.get_by_role("button", name="Postgres").click()
    checks = card.get_by_role("group", name="Checks")
    checks.get_by_role("button", name="lint").click()
    checks.get_by_role("button", name="tests").click()
    checks.get_by_role("button", name="lint").click()  # and changes her mind
    assert checks.get_by_role("button", name="lint").get_attribute("aria-pressed") == "false"
    assert checks.get_by_role("button", name="tests").get_attribute("aria-pressed") == "true"
    card.get_by_label("Add your own answer").fill("a smoke run")
    send.click()

    page.get_by_text("Postgres it is.").wait_for(timeout=60_000)
    page.get_by_test_id("session-status").filter(has_text="idle").wait_for()
    assert page.get_by_role("alert", name="Question from the agent: 2 questions").count() == 0
    page.locator('[data-call-id="q1"][data-state="completed"]').wait_for()
    request = QuestionRequest.objects.get(session_id=session_id)
    assert request.status == "answered" and request.replied_by == alice.user
    assert request.answers == [["Postgres"], ["tests", "a smoke run"]]
    # The model's next request carried the answers as the tool's result.
    sent = [json.dumps(r) for r in script.requests(script_id)]
    assert any("User has answered your questions" in r and "a smoke run" in r for r in sent)


def test_a_single_choice_answers_on_the_click(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    one = {"tool_calls": [{"name": "question", "id": "q1", "arguments": {"questions": QUESTIONS[:1]}}]}
    use(alice, script, scripted_credential, [[one], [{"text": "Noted."}]])
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made, "pick one")
    card = page.get_by_role("alert", name="Question from the agent: Database")
    card.wait_for(timeout=60_000)
    card.get_by_role("button", name="SQLite").click()
    page.get_by_text("Noted.").wait_for(timeout=60_000)
    assert QuestionRequest.objects.get(session_id=session_id).answers == [["SQLite"]]


def test_dismissing_the_question_stops_the_turn(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    use(alice, script, scripted_credential, [[ask("q1")], [{"text": "should never be said"}]])
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made, "set up the service")
    card = page.get_by_role("alert", name="Question from the agent: 2 questions")
    card.wait_for(timeout=60_000)
    card.get_by_role("button", name="Dismiss").click()
    page.locator('[data-call-id="q1"][data-state="error"]').wait_for(timeout=60_000)
    page.get_by_test_id("session-status").filter(has_text="idle").wait_for()
    assert card.count() == 0
    assert QuestionRequest.objects.get(session_id=session_id).status == "rejected"
    tool = Part.objects.get(session_id=session_id, type="tool", data__callID="q1").data
    assert tool["state"]["status"] == "error" and tool["state"]["error"] == "The user dismissed this question"
    assert page.get_by_text("should never be said").count() == 0
