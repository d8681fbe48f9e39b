"""The `task` tool in the loop (fast tier): a task starts a child session and parks the parent without
holding a worker; several tasks of one step all start before it parks; each child's end asks for the
parent's run, and the parent's waiting call returns the child's answer in OpenCode's shape. The children
are run here by hand, one Loop each, as workers would run them."""

from __future__ import annotations

import threading

import pytest

from hangar.conversations.models import Message, Part, Session
from hangar.engine.run.loop import Loop
from hangar.engine.services import session_abort
from hangar.projects.models import Project
from tests.engine.fast.scripted_model import ScriptedModel

pytestmark = [pytest.mark.fast, pytest.mark.django_db]


def tasks(*calls: dict) -> dict:
    return {"tool_calls": [{"name": "task", "id": c.pop("id"), "arguments": c} for c in calls]}


def taken(session_id: str) -> None:
    """What taking the lease does to the run request (the fast tier runs without leases)."""
    Session.objects.filter(pk=session_id).update(run_requested=False)


def run_parent(rig, model: ScriptedModel) -> None:
    taken(rig.session.pk)
    rig.run(model)


def run_child(rig, child: Session, model: ScriptedModel, abort: threading.Event | None = None) -> None:
    taken(child.pk)
    Loop(
        child.pk,
        abort or threading.Event(),
        sandbox_for=lambda _s: rig.sandbox,
        resolve_model=lambda **_: model,
    ).run()


def children(rig) -> list[Session]:
    return list(Session.objects.filter(parent_id=rig.session.pk).order_by("created_at", "id"))


def task_parts(session_id: str) -> list[dict]:
    return [p.data for p in Part.objects.filter(session_id=session_id, type="tool").order_by("id")]


def test_two_tasks_in_one_step_run_in_parallel_and_return_in_opencodes_shape(rig):
    rig.prompt("look at two things")
    parent = ScriptedModel(
        [
            [
                tasks(
                    {
                        "id": "t1",
                        "description": "Find the routes",
                        "prompt": "find routes",
                        "subagent_type": "explore",
                    },
                    {
                        "id": "t2",
                        "description": "Count the tests",
                        "prompt": "count tests",
                        "subagent_type": "general",
                    },
                )
            ],
            [{"text": "both done"}],
        ]
    )
    run_parent(rig, parent)

    # Both children started before the parent parked; the parent holds no run and waits, busy.
    explore, general = children(rig)
    assert (explore.title, explore.agent) == ("Find the routes (@explore)", "explore")
    assert (general.title, general.agent) == ("Count the tests (@general)", "general")
    assert {explore.status, general.status} == {"busy"} and explore.run_requested and general.run_requested
    assert rig.state().status == "busy" and not rig.state().run_requested
    waiting = task_parts(rig.session.pk)
    assert [p["state"]["status"] for p in waiting] == ["running", "running"]
    assert [p["state"]["metadata"]["sessionId"] for p in waiting] == [explore.pk, general.pk]
    assert waiting[0]["state"]["title"] == "Find the routes"
    assert {r["permission"] for r in general.permission} == {"todowrite", "todoread", "task"}
    (prompt,) = Message.objects.filter(session=explore, role="user")
    assert prompt.data["agent"] == "explore"
    assert Part.objects.get(message=prompt).data["text"] == "find routes"

    # One child ends: the parent is asked for; its run completes that call, finds the other child still
    # running and parks again, without a model call.
    explorer = ScriptedModel([[{"text": "routes live in urls.py"}]])
    run_child(rig, explore, explorer)
    assert Session.objects.get(pk=explore.pk).status == "idle" and rig.state().run_requested
    offered = {t["function"]["name"] for t in explorer.requests[0]["tools"]}
    assert offered == {"bash", "read", "glob", "grep", "list", "webfetch"}
    assert "file search specialist" in explorer.requests[0]["system"][0]
    run_parent(rig, parent)
    assert len(parent.requests) == 1 and rig.state().status == "busy"
    assert [p["state"]["status"] for p in task_parts(rig.session.pk)] == ["completed", "running"]

    generalist = ScriptedModel([[{"text": "draft"}, {"text": "12 tests"}]])
    run_child(rig, general, generalist)
    offered = {t["function"]["name"] for t in generalist.requests[0]["tools"]}
    assert not offered & {"todowrite", "todoread", "task"} and {"bash", "edit", "write"} <= offered
    run_parent(rig, parent)

    done = task_parts(rig.session.pk)
    assert [p["state"]["status"] for p in done] == ["completed", "completed"]
    assert done[0]["state"]["output"] == (
        f"task_id: {explore.pk} (for resuming to continue this task if needed)\n\n"
        "<task_result>\nroutes live in urls.py\n</task_result>"
    )
    assert "<task_result>\n12 tests\n</task_result>" in done[1]["state"]["output"]  # the last text part
    assert done[1]["state"]["metadata"] == {
        "sessionId": general.pk,
        "model": {"providerID": "scripted", "modelID": "fast"},
    }
    assert rig.state().status == "idle" and rig.parts("text")[-1]["text"] == "both done"
    # The model saw both results as its tool outputs.
    sent = parent.requests[1]["messages"]
    assert sum("<task_result>" in str(m.get("content")) for m in sent if m.get("role") == "tool") == 2


def test_a_task_id_resumes_the_same_child_with_a_new_prompt(rig):
    rig.prompt("start")
    first = {"id": "t1", "description": "Explore", "prompt": "first look", "subagent_type": "general"}
    parent = ScriptedModel([[tasks(first)], [{"text": "ok"}]])
    run_parent(rig, parent)
    (child,) = children(rig)
    run_child(rig, child, ScriptedModel([[{"text": "first answer"}]]))
    run_parent(rig, parent)

    rig.prompt("go on")
    again = {"id": "t2", "description": "Explore more", "prompt": "look again", "subagent_type": "general"}
    parent.turns += [[tasks({**again, "task_id": child.pk})], [{"text": "ok again"}]]
    run_parent(rig, parent)
    assert children(rig) == [child]  # no new child
    assert Message.objects.filter(session=child, role="user").count() == 2
    child_model = ScriptedModel([[{"text": "second answer"}]])
    run_child(rig, child, child_model)
    assert [m["role"] for m in child_model.requests[0]["messages"]].count("user") == 2  # it kept its history
    run_parent(rig, parent)
    last = task_parts(rig.session.pk)[-1]["state"]
    assert last["status"] == "completed" and "<task_result>\nsecond answer\n</task_result>" in last["output"]


def test_an_unknown_or_primary_agent_is_a_clear_tool_error(rig):
    rig.prompt("delegate")
    parent = ScriptedModel(
        [
            [
                tasks(
                    {"id": "t1", "description": "x", "prompt": "p", "subagent_type": "wizard"},
                    {"id": "t2", "description": "y", "prompt": "p", "subagent_type": "build"},
                )
            ],
            [{"text": "fine"}],
        ]
    )
    run_parent(rig, parent)
    errors = [p["state"]["error"] for p in task_parts(rig.session.pk)]
    assert errors[0].startswith("Unknown agent type: wizard is not a valid agent type")
    assert "general" in errors[0] and "explore" in errors[0]
    assert errors[1].startswith("Unknown agent type: build")
    assert children(rig) == [] and rig.state().status == "idle"


def test_the_parents_task_rules_gate_which_subagents_it_may_call(rig):
    Project.objects.filter(pk=rig.session.project_id).update(permission_rules={"task": {"explore": "deny"}})
    rig.prompt("delegate")
    parent = ScriptedModel(
        [
            [
                tasks(
                    {"id": "t1", "description": "x", "prompt": "p", "subagent_type": "explore"},
                    {"id": "t2", "description": "y", "prompt": "p", "subagent_type": "general"},
                )
            ],
            [{"text": "fine"}],
        ]
    )
    run_parent(rig, parent)
    denied, allowed = task_parts(rig.session.pk)
    assert denied["state"]["status"] == "error" and "(task explore)" in denied["state"]["error"]
    assert allowed["state"]["status"] == "running"
    assert [c.agent for c in children(rig)] == ["general"]
    # The model is not offered what its rules deny (OpenCode's task description lists the callable ones).
    (task_tool,) = [t["function"] for t in parent.requests[0]["tools"] if t["function"]["name"] == "task"]
    assert "- general: General-purpose agent" in task_tool["description"]
    assert "- explore:" not in task_tool["description"] and "{agents}" not in task_tool["description"]


def test_with_no_task_rules_every_subagent_is_offered(rig):
    rig.prompt("delegate")
    parent = ScriptedModel([[{"text": "no need"}]])
    run_parent(rig, parent)
    (task_tool,) = [t["function"] for t in parent.requests[0]["tools"] if t["function"]["name"] == "task"]
    assert "- general: General-purpose agent" in task_tool["description"]
    assert "- explore: Fast agent specialized for exploring codebases" in task_tool["description"]


def test_a_childs_failure_reaches_the_parent_as_a_tool_error(rig):
    from hangar.engine.providers.base import ProviderError

    rig.prompt("delegate")
    parent = ScriptedModel(
        [
            [tasks({"id": "t1", "description": "x", "prompt": "p", "subagent_type": "general"})],
            [{"text": "ok"}],
        ]
    )
    run_parent(rig, parent)
    (child,) = children(rig)
    broken = ProviderError("the model is gone", status=400, retryable=False)
    run_child(rig, child, ScriptedModel([[{"error": broken}]]))
    run_parent(rig, parent)
    (part,) = task_parts(rig.session.pk)
    assert part["state"]["status"] == "error"
    assert part["state"]["error"] == "The subagent failed: the model is gone"
    assert rig.state().status == "idle"


def test_the_parents_abort_aborts_its_running_children(rig, alice):
    rig.prompt("delegate")
    parent = ScriptedModel(
        [
            [
                tasks(
                    {"id": "t1", "description": "x", "prompt": "p", "subagent_type": "general"},
                    {"id": "t2", "description": "y", "prompt": "q", "subagent_type": "explore"},
                )
            ]
        ]
    )
    run_parent(rig, parent)
    first, second = children(rig)
    run_child(rig, first, ScriptedModel([[{"text": "done early"}]]))  # one had already ended

    session_abort(actor=alice.actor, session=rig.session)
    assert Session.objects.get(pk=second.pk).abort_requested  # at once, by the abort itself
    assert not Session.objects.get(pk=first.pk).abort_requested  # an idle child has nothing to stop
    run_parent(rig, parent)
    assert rig.state().status == "idle"
    assert {p["state"]["error"] for p in task_parts(rig.session.pk)} == {"Tool execution aborted"}

    run_child(rig, second, ScriptedModel([]))  # its run sees the abort before any model call
    stopped = Session.objects.get(pk=second.pk)
    assert stopped.status == "idle" and not stopped.abort_requested
    assert not rig.state().run_requested  # an aborted parent waits for nothing


def test_an_ask_rule_for_task_asks_the_person_before_the_child_is_made(rig, alice):
    from hangar.conversations.models import PermissionRequest
    from hangar.engine.reply_services import permission_reply

    Project.objects.filter(pk=rig.session.project_id).update(permission_rules={"task": "ask"})
    rig.prompt("delegate")
    parent = ScriptedModel(
        [
            [tasks({"id": "t1", "description": "x", "prompt": "p", "subagent_type": "general"})],
            [{"text": "ok"}],
        ]
    )
    run_parent(rig, parent)
    request = PermissionRequest.objects.get(session=rig.session)
    assert (request.permission, request.patterns, request.always) == ("task", ["general"], ["*"])
    assert children(rig) == []

    permission_reply(actor=alice.actor, request=request, reply="once")
    run_parent(rig, parent)
    (child,) = children(rig)
    run_child(rig, child, ScriptedModel([[{"text": "done"}]]))
    run_parent(rig, parent)
    (part,) = task_parts(rig.session.pk)
    assert (
        part["state"]["status"] == "completed"
        and "<task_result>\ndone\n</task_result>" in part["state"]["output"]
    )
    assert rig.state().status == "idle"


def test_a_prompts_subtask_part_runs_that_subagent_without_a_model_call_or_a_permission(rig, alice):
    from hangar.engine.services import PromptRejected, session_prompt
    from hangar.usage.models import UsageRecord

    # The person named the subagent: an ask rule for task is not asked.
    Project.objects.filter(pk=rig.session.project_id).update(permission_rules={"task": "ask"})
    subtask = {
        "type": "subtask",
        "agent": "explore",
        "description": "Find routes",
        "prompt": "find the routes",
        "model": {"providerID": "scripted", "modelID": "small"},
    }
    with pytest.raises(PromptRejected, match="unknown subagent 'build'"):
        session_prompt(actor=alice.actor, session=rig.session, parts=[{**subtask, "agent": "build"}])
    session_prompt(actor=alice.actor, session=rig.session, parts=[subtask])
    parent = ScriptedModel([[{"text": "the explorer found them"}]])
    run_parent(rig, parent)

    assert parent.requests == []  # no model call started the task
    (child,) = children(rig)
    assert (child.title, child.agent) == ("Find routes (@explore)", "explore")
    assert child.model == {"providerID": "scripted", "modelID": "small"}  # the subtask's own model
    (step,) = rig.assistants()
    assert step["agent"] == "explore" and step["finish"] == "tool-calls"
    (part,) = task_parts(rig.session.pk)
    assert part["state"]["input"] == {
        "prompt": "find the routes",
        "description": "Find routes",
        "subagent_type": "explore",
    }
    assert part["state"]["status"] == "running"

    run_child(rig, child, ScriptedModel([[{"text": "urls.py"}]]))
    run_parent(rig, parent)
    (part,) = task_parts(rig.session.pk)
    assert (
        part["state"]["status"] == "completed"
        and "<task_result>\nurls.py\n</task_result>" in part["state"]["output"]
    )
    assert [m["finish"] for m in rig.assistants()] == ["tool-calls", "stop"]
    sent = parent.requests[0]["messages"]
    assert sent[0] == {"role": "user", "content": "The following tool was executed by the user"}
    # One ledger row for the parent: its one model call (the subtask's step made none).
    assert UsageRecord.objects.filter(session_id=rig.session.pk, kind="step").count() == 1
