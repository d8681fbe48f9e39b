"""What one agent step costs the database, pinned: a regression in the loop's per-step statements shows
up here before it shows up in bench/agent_step.py. The run is the Celery task's own function, called in
this process (the real sandbox, the scripted server over HTTP), so every statement can be captured."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hangar.conversations.models import Part
from hangar.engine.run.worker import run_session_once
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_prompt, tool_parts

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def test_a_tool_step_is_two_reads_and_three_writes(alice, script, make_session):
    script_id = script.load(
        [
            [call("write", "c1", filePath="/workspace/a.txt", content="a\n")],
            [call("bash", "c2", command="cat a.txt", description="show")],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write and show"))
    with CaptureQueriesContext(connection) as queries:
        run_session_once(session.pk)
    sql = [q["sql"] for q in queries.captured_queries]
    starts = [i for i, s in enumerate(sql) if s.startswith("SELECT s.permission, p.permission_rules")]
    assert len(starts) == 3  # one per step (the last step's "stop" ends the turn without another)
    # A step: the assistant message with its step-start; the call running; its outcome with the step's
    # closing parts. The first step also reads what a run reads once (credential, sandbox env).
    first_step, second_step = sql[starts[0] + 1 : starts[1]], sql[starts[1] + 1 : starts[2]]
    # The usage gate's allow-list and budgets (hangar.usage.gate) ride in the step's read: no statement of
    # their own before the call.
    assert "usage_modelallowlist" in sql[starts[1]] and "usage_budget" in sql[starts[1]]
    assert len(second_step) == 3, second_step
    for step in (first_step[-3:], second_step):
        assert step[0].startswith("WITH w0 AS (INSERT INTO conversations_message")
        assert all(s.startswith("WITH w0 AS (INSERT INTO conversations_part") for s in step[1:])
    assert [(t["tool"], t["state"]["status"]) for t in tool_parts(session)] == [
        ("write", "completed"),
        ("bash", "completed"),
    ]
    assert "a" in tool_parts(session)[1]["state"]["output"]
    # The deferred outcome is written with, and before, the closing parts: all of them are there.
    kinds = list(Part.objects.filter(session=session).order_by("id").values_list("type", flat=True))
    assert kinds.count("step-finish") == 3 and kinds.count("patch") == 1


def test_a_run_that_changed_files_ends_with_a_diff_summary_of_three_reads_and_one_write(
    alice, script, make_session
):
    script_id = script.load(
        [[call("write", "c1", filePath="/workspace/a.txt", content="a\nb\n")], [{"text": "done"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write"))
    with CaptureQueriesContext(connection) as queries:
        run_session_once(session.pk)
    sql = [q["sql"] for q in queries.captured_queries]
    begin = next(i for i, s in enumerate(sql) if s.startswith("SELECT (SELECT data->>'snapshot'"))
    end = next(i for i, s in enumerate(sql) if "INSERT INTO conversations_sessiondiff" in s)
    # The trees (one read), the session under its lock, the prompt, then stored and told in one statement.
    statements = [s for s in sql[begin : end + 1] if s != "BEGIN"]
    assert len(statements) == 4, statements
    assert statements[1].endswith("FOR UPDATE")
    assert sum("conversations_sessiondiff" in s for s in sql) == 1
    session.refresh_from_db()
    assert session.summary == {"additions": 2, "deletions": 0, "files": 1}
