"""A NUL character or a lone surrogate in a model's text or a tool's output (jsonb refuses both) is
stored as U+FFFD instead of failing the write and crashing the run; the model is sent the same text."""

import pytest

from hangar.conversations.models import Part, Session
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_prompt, tool_parts, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def test_nul_and_lone_surrogates_are_stored_as_replacement_characters(alice, script, make_session, worker):
    script_id = script.load(
        [
            [
                {"text": "model says a\u0000b and c\ud800d"},
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "id": "b1",
                            "arguments": {"command": "printf 'x\\000y'", "description": "nul"},
                        }
                    ]
                },
            ],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("print a NUL"))
    session = wait_idle(session, timeout=120)

    texts = [
        p.data["text"]
        for p in Part.objects.filter(session=session, type="text")
        if p.message.role == "assistant"
    ]
    assert "model says a\ufffdb and c\ufffdd" in texts, texts
    bash = tool_parts(Session.objects.get(pk=session.pk))[0]
    assert bash["state"]["status"] == "completed", bash["state"]
    assert "x\ufffdy" in bash["state"]["output"], repr(bash["state"]["output"])
    assert texts[-1] == "done"
    # the step after the tool call (the title request, which may come last, carries no tool result)
    sent = [m for request in script.requests(script_id) for m in request["messages"]]
    tool_result = [m for m in sent if m.get("role") == "tool"][-1]
    assert "x\ufffdy" in str(tool_result["content"])
