"""The stock JS SDK (@opencode-ai/sdk v2, as the CLI uses it) drives the agent's longer moves against
Hangar served by Daphne, with a real worker and the scripted model: a summarize (compaction) after a
prompt, a run that starts a subagent task (and the parent's children), and a question answered and one
rejected, each waited for on the SDK's own event stream."""

import json

import pytest

from tests.engine.conftest import give_scripted_credential
from tests.opencode.live import call, run_sdk_flow

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = {
    "questions": [
        {
            "question": "Which colour?",
            "header": "Colour",
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
        }
    ]
}


@pytest.fixture
def routed(alice, scripted):
    """alice's project on the scripted model, each conversation's script named by its first message."""
    give_scripted_credential(alice.org, scripted)
    alice.project.default_model = "scripted/router"
    alice.project.save()
    return alice.project


def sdk(daphne, project, persona, step: str, text: str, made: list) -> dict:
    out = run_sdk_flow("agent_flow.mjs", daphne, project, persona, OC_STEP=step, OC_TEXT=text)
    made.append(out["sessionID"])
    return out


def parts(out: dict, kind: str) -> list[dict]:
    return [p for m in out["messages"] for p in m["parts"] if p["type"] == kind]


def test_the_sdk_summarizes_a_session(alice, daphne, worker, script, routed, sessions_made):
    turns = script.load([[{"text": "first answer"}], [{"text": "## Goal\nKeep the summary short."}]])
    out = sdk(daphne, routed, alice, "summarize", f"[[script:{turns}]] hello", sessions_made)
    assert len(parts(out, "compaction")) == 1
    summary = [m for m in out["messages"] if m["info"].get("summary") is True]
    assert summary and "Keep the summary short." in json.dumps(summary[-1]["parts"])


def test_the_sdk_runs_a_task_and_lists_the_child(alice, daphne, worker, script, routed, sessions_made):
    kid = script.load([[{"text": "the child looked"}]])
    parent = script.load(
        [
            [
                call(
                    "task", "t1", description="Look", prompt=f"[[script:{kid}]] look", subagent_type="general"
                )
            ],
            [{"text": "parent done"}],
        ]
    )
    out = sdk(daphne, routed, alice, "task", f"[[script:{parent}]] delegate", sessions_made)
    (child,) = out["children"]
    assert child["parentID"] == out["sessionID"] and child["title"] == "Look (@general)"
    (task,) = [p for p in parts(out, "tool") if p["tool"] == "task"]
    assert task["state"]["status"] == "completed" and "the child looked" in task["state"]["output"]


def test_the_sdk_answers_a_question(alice, daphne, worker, script, routed, sessions_made):
    turns = script.load([[call("question", "q1", **QUESTION)], [{"text": "Blue it is"}]])
    out = sdk(daphne, routed, alice, "answer", f"[[script:{turns}]] ask me", sessions_made)
    assert out["asked"]["questions"][0]["question"] == "Which colour?"
    (asked,) = [p for p in parts(out, "tool") if p["tool"] == "question"]
    assert asked["state"]["status"] == "completed" and "Blue" in asked["state"]["output"]
    assert parts(out, "text")[-1]["text"] == "Blue it is"


def test_the_sdk_rejects_a_question_and_the_turn_stops(alice, daphne, worker, script, routed, sessions_made):
    turns = script.load([[call("question", "q1", **QUESTION)], [{"text": "never said"}]])
    out = sdk(daphne, routed, alice, "reject", f"[[script:{turns}]] ask me", sessions_made)
    (asked,) = [p for p in parts(out, "tool") if p["tool"] == "question"]
    assert asked["state"]["status"] == "error"
    assert "never said" not in json.dumps(out["messages"])
