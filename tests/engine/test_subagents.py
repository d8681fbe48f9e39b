"""Subagents end to end (seed 000 §2.4, §3.4): the `task` tool in a real worker, with Docker sandboxes and
the scripted model over HTTP. Parent and children are scripted separately: the sessions' model names no
script, so the scripted server picks each conversation's script from the `[[script:…]]` marker of its
first user message (the parent's prompt, each child's task prompt)."""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from hangar.conversations.models import Event, Message, Session
from hangar.engine.services import session_abort, session_prompt
from tests.engine.conftest import give_scripted_credential, text_prompt, tool_parts, wait_for, wait_idle
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db(transaction=True)


def task(call_id: str, description: str, prompt: str, agent: str, **extra) -> dict:
    args = {"description": description, "prompt": prompt, "subagent_type": agent, **extra}
    return {"name": "task", "id": call_id, "arguments": args}


def bash(call_id: str, command: str) -> dict:
    return {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}


def calls(*tool_calls: dict) -> list[dict]:
    return [{"tool_calls": list(tool_calls)}]


@pytest.fixture
def routed_session(scripted, sessions_made):
    """A session whose model names no script (each conversation's marker chooses it)."""
    from hangar.conversations.services import session_create

    def make(persona) -> Session:
        give_scripted_credential(persona.org, scripted)
        session = session_create(
            actor=persona.actor,
            project=persona.project,
            model={"providerID": "scripted", "modelID": "router"},
        )
        sessions_made.append(session.pk)
        return session

    return make


def children_of(session: Session) -> list[Session]:
    return list(Session.objects.filter(parent_id=session.pk).order_by("created_at", "id"))


def oc_client(persona) -> APIClient:
    client = APIClient()
    basic = base64.b64encode(f"opencode:{persona.token}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    return client


def test_two_tasks_run_in_parallel_in_the_parents_workspace_and_children_get_no_todos(
    alice, charlie, script, routed_session, worker
):
    kids = {}
    for name in ("a", "b"):
        kids[name] = script.load(
            [
                # A child is not offered todowrite; called anyway, it fails and the child goes on.
                calls({"name": "todowrite", "id": "td", "arguments": {"todos": []}}),
                calls(bash("s1", f"sleep 2; echo from-{name} > /workspace/{name}.txt")),
                [{"text": f"{name} wrote its file"}],
            ]
        )
    parent_script = script.load(
        [
            calls(
                task("t1", "Write a", f"[[script:{kids['a']}]] write a", "general"),
                task("t2", "Write b", f"[[script:{kids['b']}]] write b", "general"),
            ),
            calls(bash("b1", "cat /workspace/a.txt /workspace/b.txt")),
            [{"text": "both children done"}],
        ]
    )
    session = routed_session(alice)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"[[script:{parent_script}]] go"))
    session = wait_idle(session, timeout=120)

    first, second = children_of(session)
    assert [c.title for c in (first, second)] == ["Write a (@general)", "Write b (@general)"]
    parts = tool_parts(session)
    outputs = {p["callID"]: p["state"] for p in parts}
    assert outputs["t1"]["output"] == (
        f"task_id: {first.pk} (for resuming to continue this task if needed)\n\n"
        "<task_result>\na wrote its file\n</task_result>"
    )
    assert outputs["t2"]["metadata"]["sessionId"] == second.pk
    # The children wrote into the parent's workspace (one sandbox for the tree of sessions).
    assert outputs["b1"]["output"].split() == ["from-a", "from-b"]
    assert Message.objects.filter(session=session, role="assistant").last().data["finish"] == "stop"

    # The two children's sleeps overlapped: they ran at once, each as its own run.
    windows = []
    for child in (first, second):
        (sleep,) = [p for p in tool_parts(child) if p["callID"] == "s1"]
        windows.append((sleep["state"]["time"]["start"], sleep["state"]["time"]["end"]))
        (todo,) = [p for p in tool_parts(child) if p["callID"] == "td"]
        assert todo["tool"] == "invalid" and todo["state"]["metadata"] == {"tool": "todowrite"}
        child = Session.objects.get(pk=child.pk)
        assert child.status == "idle" and child.cost >= 0 and child.tokens.get("output", 0) > 0
    (a_start, a_end), (b_start, b_end) = windows
    assert a_start < b_end and b_start < a_end

    # The children are listed on both APIs, to the parent's org only, and announced on the stream.
    listed = oc_client(alice).get(f"{base_url(alice)}/session/{session.pk}/children")
    assert_response(listed, "/session/{sessionID}/children")
    assert {c["id"] for c in listed.json()} == {first.pk, second.pk}
    assert {c["parentID"] for c in listed.json()} == {session.pk}
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {alice.token}")
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{session.pk}/children/"
    assert {c["id"] for c in api.get(url).json()} == {first.pk, second.pk}
    assert oc_client(charlie).get(f"{base_url(alice)}/session/{session.pk}/children").status_code == 404
    created = Event.objects.filter(session_id=first.pk, type="session.created").get()
    assert created.payload["info"]["parentID"] == session.pk
    assert Event.objects.filter(session_id=first.pk, type="session.idle").exists()


def test_a_task_id_resumes_the_child_with_its_history(alice, script, routed_session, worker):
    kid = script.load([[{"text": "first answer"}], [{"text": "second answer"}]])
    session = routed_session(alice)
    parent_script = script.load(
        [calls(task("t1", "Look", f"[[script:{kid}]] look", "explore")), [{"text": "noted"}]], shared=True
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"[[script:{parent_script}]] go"))
    session = wait_idle(session, timeout=90)
    (child,) = children_of(session)

    # The parent's next turns, now that the child's id is known (the same script, played from its start).
    script.load(
        [
            calls(task("t2", "Look again", "look again", "explore", task_id=child.pk)),
            [{"text": "noted twice"}],
        ],
        shared=True,
        script_id=parent_script,
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("again"))
    session = wait_idle(session, timeout=90)

    assert children_of(session) == [child]
    assert Message.objects.filter(session=child, role="user").count() == 2
    last = next(p for p in tool_parts(session) if p["callID"] == "t2")["state"]
    assert last["status"] == "completed" and "<task_result>\nsecond answer\n</task_result>" in last["output"]
    assert last["output"].startswith(f"task_id: {child.pk} ")


def test_the_parents_abort_stops_its_running_children(alice, script, routed_session, worker):
    kid = script.load([calls(bash("s1", "sleep 120")), [{"text": "never"}]])
    parent_script = script.load([calls(task("t1", "Wait", f"[[script:{kid}]] wait", "general"))])
    session = routed_session(alice)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"[[script:{parent_script}]] go"))

    child = wait_for(lambda: next(iter(children_of(session)), None), what="the child session")
    wait_for(
        lambda: any(p["state"]["status"] == "running" for p in tool_parts(child)),
        what="the child's command to run",
    )
    parent = Session.objects.get(pk=session.pk)
    assert parent.status == "busy" and not parent.lease_owner  # parked: no worker waits for the child

    session_abort(actor=alice.actor, session=session)
    wait_idle(session, timeout=30)
    wait_idle(child, timeout=30)
    (waiting,) = tool_parts(session)
    assert waiting["state"]["status"] == "error" and waiting["state"]["error"] == "Tool execution aborted"
    (sleep,) = tool_parts(child)
    assert sleep["state"]["status"] == "error"
    last = Message.objects.filter(session=child, role="assistant").last().data
    assert last["error"]["name"] == "MessageAbortedError"


def test_a_worker_killed_mid_child_leaves_neither_child_nor_parent_busy(
    alice, script, routed_session, start_worker
):
    kid = script.load([calls(bash("s1", "sleep 300")), [{"text": "recovered"}]])
    parent_script = script.load(
        [calls(task("t1", "Wait", f"[[script:{kid}]] wait", "general")), [{"text": "parent done"}]]
    )
    first = start_worker()
    session = routed_session(alice)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"[[script:{parent_script}]] go"))
    child = wait_for(lambda: next(iter(children_of(session)), None), what="the child session")
    wait_for(
        lambda: any(p["state"]["status"] == "running" for p in tool_parts(child)),
        what="the child's command to run",
    )

    first.kill()  # SIGKILL: the child's lease expires, beat's recovery hands it to another worker
    start_worker(beat=True)
    wait_idle(child, timeout=90)
    session = wait_idle(session, timeout=30)  # the child's end woke the parked parent

    (sleep,) = tool_parts(child)
    assert sleep["state"]["status"] == "error" and sleep["state"]["error"] == "Tool execution aborted"
    (waited,) = tool_parts(session)
    assert waited["state"]["status"] == "completed"
    assert "<task_result>\nrecovered\n</task_result>" in waited["state"]["output"]
    assert Message.objects.filter(session=session, role="assistant").last().data["finish"] == "stop"
