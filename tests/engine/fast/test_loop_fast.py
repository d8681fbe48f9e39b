"""The loop's turns, endings and guards, in process (see conftest.py): one test per way a turn goes."""

from __future__ import annotations

import dataclasses

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, PermissionRequest
from hangar.engine.agents.builtin import AGENTS
from hangar.engine.providers.base import ProviderError
from hangar.engine.reply_services import permission_reply
from hangar.engine.services import session_prompt
from hangar.engine.session.system import prompt_text
from hangar.projects.models import Project
from tests.engine.fast.scripted_model import ScriptedModel, call

pytestmark = [pytest.mark.fast, pytest.mark.django_db]


def ask_for_bash(project: Project) -> None:
    Project.objects.filter(pk=project.pk).update(
        permission_rules=[{"permission": "bash", "pattern": "*", "action": "ask"}]
    )


def events(rig, kind: str) -> list[dict]:
    return [e.payload for e in Event.objects.filter(session_id=rig.session.pk, type=kind).order_by("seq")]


def turn_endings(rig) -> list[dict]:
    """How each turn ended, as the audit log's session.finished rows say (by the system, for the agent)."""
    rows = AuditEvent.objects.filter(action="session.finished", target_id=rig.session.pk).order_by("id")
    assert all(r.actor_type == "system" and r.data["session"] == rig.session.pk for r in rows)
    return [{"outcome": r.data["outcome"], "steps": r.data["steps"]} for r in rows]


def test_a_text_turn_answers_goes_idle_and_titles_the_session(rig):
    rig.prompt("hello")
    model = ScriptedModel([[{"text": "hi there"}, {"usage": {"input": 12, "output": 3}}]], title="Greeting")
    rig.run(model)

    assert [m["finish"] for m in rig.assistants()] == ["stop"]
    assert [p["text"] for p in rig.parts("text")][-1] == "hi there"
    session = rig.state()
    assert session.status == "idle" and session.title == "Greeting"
    assert session.tokens["input"] == 12 and session.tokens["output"] == 3
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": "hello"}
    assert turn_endings(rig) == [{"outcome": "finished", "steps": 1}]


def test_a_tool_turn_runs_the_calls_and_closes_each_step_with_its_snapshot_and_patch(rig):
    rig.prompt("write and show")
    model = ScriptedModel(
        [
            [call("write", "c1", filePath="/workspace/a.txt", content="a\n")],
            [call("bash", "c2", command="cat a.txt", description="show")],
            [{"text": "done"}],
        ]
    )
    rig.run(model)

    tools = rig.parts("tool")
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("write", "completed"),
        ("bash", "completed"),
    ]
    assert "a" in tools[1]["state"]["output"]
    assert [m["finish"] for m in rig.assistants()] == ["tool-calls", "tool-calls", "stop"]
    assert [p["files"] for p in rig.parts("patch")] == [["/workspace/a.txt"]]
    starts, finishes = rig.parts("step-start"), rig.parts("step-finish")
    assert starts[1]["snapshot"] == finishes[0]["snapshot"] != starts[0]["snapshot"]
    assert (rig.sandbox.root / "workspace/a.txt").read_text() == "a\n"
    # The tool results went back to the model.
    assert {"role": "tool", "tool_call_id": "c1", "content": tools[0]["state"]["output"]} in model.requests[
        1
    ]["messages"]


def test_a_permission_ask_parks_the_run_and_the_reply_resumes_the_waiting_call(rig, alice):
    ask_for_bash(alice.project)
    rig.prompt("run it")
    model = ScriptedModel(
        [[call("bash", "c1", command="echo approved", description="run")], [{"text": "ran"}]]
    )
    rig.run(model)

    request = PermissionRequest.objects.get(session=rig.session, status="pending")
    assert request.permission == "bash" and request.call_id == "c1"
    assert rig.state().status == "busy"
    part = rig.parts("tool")[0]
    assert part["state"]["status"] == "running" and part["metadata"]["awaiting"] == request.pk

    asked = AuditEvent.objects.get(action="permission.ask")
    assert (asked.target_id, asked.actor_type) == (request.pk, "system")
    assert asked.data == {
        "session": rig.session.pk,
        "project": alice.project.pk,
        "permission": "bash",
        "patterns": ["echo approved"],
    }

    permission_reply(actor=alice.actor, request=request, reply="once")
    rig.run(model)
    part = rig.parts("tool")[0]
    assert part["state"]["status"] == "completed" and "approved" in part["state"]["output"]
    assert [m["finish"] for m in rig.assistants()] == ["tool-calls", "stop"]
    assert rig.state().status == "idle"


def test_a_rejection_without_feedback_stops_the_turn(rig, alice):
    ask_for_bash(alice.project)
    rig.prompt("run it")
    model = ScriptedModel([[call("bash", "c1", command="echo no", description="run")]])
    rig.run(model)
    request = PermissionRequest.objects.get(session=rig.session, status="pending")

    permission_reply(actor=alice.actor, request=request, reply="reject")
    rig.run(model)
    assert rig.parts("tool")[0]["state"]["status"] == "error"
    assert [m["finish"] for m in rig.assistants()] == ["stop"]
    assert rig.state().status == "idle" and len(model.requests) == 1
    assert turn_endings(rig) == [{"outcome": "stopped", "steps": 0}]  # the run the reply started


def test_an_abort_mid_stream_ends_the_message_aborted_and_clears_the_flag(rig):
    rig.prompt("start")
    model = ScriptedModel([[{"text": "partial"}, {"do": lambda abort: abort.set()}]])
    rig.run(model)

    (message,) = rig.assistants()
    assert message["error"]["name"] == "MessageAbortedError" and message["time"]["completed"]
    session = rig.state()
    assert session.status == "idle" and not session.abort_requested
    assert turn_endings(rig) == [{"outcome": "aborted", "steps": 1}]
    assert session.title == "start"  # an aborted turn is not titled: the prompt's words stay


def test_the_step_limit_makes_the_last_step_tool_less_and_ends_the_turn_there(rig, monkeypatch):
    monkeypatch.setitem(AGENTS, "build", dataclasses.replace(AGENTS["build"], steps=2))
    rig.sandbox.write("/workspace/a.txt", "a\n")
    rig.prompt("look around")
    read = call("read", "c1", filePath="/workspace/a.txt")
    model = ScriptedModel([[read], [call("read", "c2", filePath="/workspace/a.txt")]])
    rig.run(model)

    assert len(model.requests) == 2  # a third step is never started
    assert model.requests[0]["tools"] and model.requests[1]["tools"] == []
    assert prompt_text("max_steps") in model.requests[1]["messages"][-1]["content"]
    assert len(rig.assistants()) == 2 and rig.state().status == "idle"


def test_a_retryable_provider_error_is_retried_and_the_answer_arrives(rig):
    rig.prompt("hello")
    busy = ProviderError("rate limited", status=429, retryable=True, headers={"retry-after-ms": "5"})
    model = ScriptedModel([[{"error": busy}], [{"text": "after the retry"}]])
    rig.run(model)

    (retry,) = rig.parts("retry")
    assert retry["attempt"] == 1 and retry["error"]["data"]["statusCode"] == 429
    assert [p["text"] for p in rig.parts("text")][-1] == "after the retry"
    statuses = [e["status"]["type"] for e in events(rig, "session.status")]
    assert statuses[-3:] == ["retry", "busy", "idle"]


def test_a_provider_error_that_cannot_be_retried_ends_the_turn_with_the_error(rig):
    rig.prompt("hello")
    model = ScriptedModel([[{"error": ProviderError("bad request", status=400)}]])
    rig.run(model)

    (message,) = rig.assistants()
    assert message["error"]["name"] == "APIError" and message["error"]["data"]["statusCode"] == 400
    assert [e["error"]["data"]["message"] for e in events(rig, "session.error")] == ["bad request"]
    assert rig.state().status == "idle"
    assert turn_endings(rig) == [{"outcome": "error", "steps": 1}]


def test_a_model_that_cannot_be_resolved_says_so_before_touching_the_sandbox(rig):
    rig.prompt("hello")

    def no_credential(**_):
        raise ProviderError("no credential for provider scripted", name="ProviderAuthError")

    attached = []
    rig.sandbox.write("/workspace/.opencode/skills/lint/SKILL.md", "---\ndescription: lint\n---\nRun it.\n")
    rig.run(
        ScriptedModel([]),
        resolve_model=no_credential,
        sandbox_for=lambda _session: attached.append(1) or rig.sandbox,
    )
    assert [e["error"]["name"] for e in events(rig, "session.error")] == ["ProviderAuthError"]
    assert [m["error"]["name"] for m in rig.assistants()] == ["ProviderAuthError"]
    assert rig.state().status == "idle"
    assert attached == []  # it failed before anything (skills, instructions) needed the sandbox


def test_a_message_sent_mid_loop_reaches_the_next_step_as_a_system_reminder(rig, alice):
    rig.sandbox.write("/workspace/a.txt", "a\n")
    rig.prompt("read a.txt")

    def interject(_abort):
        session_prompt(actor=alice.actor, session=rig.session, parts=[{"type": "text", "text": "also b"}])

    model = ScriptedModel(
        [[call("read", "c1", filePath="/workspace/a.txt"), {"do": interject}], [{"text": "ok, b too"}]]
    )
    rig.run(model)

    last = model.requests[1]["messages"][-1]
    assert last["role"] == "user" and "<system-reminder>" in last["content"] and "also b" in last["content"]
    assert [m["finish"] for m in rig.assistants()] == ["tool-calls", "stop"]


def test_three_identical_calls_in_a_row_ask_doom_loop(rig):
    rig.sandbox.write("/workspace/a.txt", "a\n")
    rig.prompt("read it again and again")
    same = [call("read", f"c{i}", filePath="/workspace/a.txt") for i in range(3)]
    model = ScriptedModel([[same[0]], [same[1]], [same[2]]])
    rig.run(model)

    request = PermissionRequest.objects.get(session=rig.session, status="pending")
    assert request.permission == "doom_loop" and request.call_id == "c2"
    assert [t["state"]["status"] for t in rig.parts("tool")] == ["completed", "completed", "running"]


def _system_text(request: dict) -> str:
    return "\n".join(request["system"])


@pytest.mark.parametrize("clone", [False, True])
def test_the_environment_block_says_whether_the_workspace_is_a_git_repository(rig, clone):
    if clone:
        (rig.sandbox.root / "workspace/.git").mkdir()
    rig.prompt("where am I")
    model = ScriptedModel([[{"text": "here"}]])
    rig.run(model)

    expected = "yes" if clone else "no"
    assert f"Is directory a git repo: {expected}" in _system_text(model.requests[0])


def test_the_model_is_offered_the_agents_tools_without_the_internal_invalid_tool(rig):
    rig.prompt("hello")
    model = ScriptedModel([[call("Frobnicate", "c1")], [{"text": "ok"}]])
    rig.run(model)

    offered = {tool["function"]["name"] for tool in model.requests[0]["tools"]}
    assert "invalid" not in offered and {"bash", "read", "edit", "write"} <= offered
    (routed,) = rig.parts("tool")
    # OpenCode 1.18.33's text, measured with `opencode run`: every tool the SDK holds, sorted, `invalid`
    # among them ("bash, edit, glob, grep, invalid, read, skill, task, todowrite, webfetch, write.").
    listed = routed["state"]["output"].split("Available tools: ")[1].rstrip(".").split(", ")
    assert routed["tool"] == "invalid" and "invalid" in listed and listed == sorted(listed)
    assert routed["state"]["output"].startswith(
        "The arguments provided to the tool are invalid: Model tried to call unavailable tool 'Frobnicate'. "
    )


def test_arguments_that_are_not_json_get_opencodes_words(rig):
    rig.prompt("hello")
    model = ScriptedModel(
        [[{"tool_calls": [{"name": "read", "id": "c1", "arguments": "{bad json"}]}], [{"text": "ok"}]]
    )
    rig.run(model)
    (routed,) = rig.parts("tool")
    assert routed["tool"] == "invalid"
    assert routed["state"]["output"].startswith(
        "The arguments provided to the tool are invalid: Invalid input for tool read: "
        "JSON parsing failed: Text: {bad json.\nError message: "
    )


def test_a_call_a_rule_denies_is_refused_to_the_model_and_audited(rig, alice):
    Project.objects.filter(pk=alice.project.pk).update(
        permission_rules=[{"permission": "bash", "pattern": "rm *", "action": "deny"}]
    )
    rig.prompt("clean up")
    rig.run(
        ScriptedModel([[call("bash", "c1", command="rm -rf build", description="clean")], [{"text": "ok"}]])
    )
    part = rig.parts("tool")[0]
    assert part["state"]["status"] == "error" and "prevents you from using" in part["state"]["error"]
    denied = AuditEvent.objects.get(action="tool.denied")
    assert denied.target_id == rig.session.pk and denied.data["patterns"] == ["rm -rf build"]
    assert denied.data["permission"] == "bash" and denied.data["session"] == rig.session.pk


def test_a_model_that_reports_no_usage_is_counted_from_what_was_sent_and_streamed(rig):
    """The bundled llama.cpp model reports no token counts: the ledger, budgets and the session's totals
    must not read zero for it (counted as OpenCode counts without a tokenizer, four characters a token)."""
    from hangar.usage.models import UsageRecord

    rig.prompt("say something long")
    answer = "word " * 200
    model = ScriptedModel([[{"text": answer}], [{"text": "reported"}, {"usage": {"input": 7, "output": 2}}]])
    rig.run(model)

    first = rig.assistants()[0]["tokens"]
    assert first["output"] == round(len(answer) / 4) == 250
    assert first["input"] >= round(len("say something long") / 4) and first["input"] > 0
    row = UsageRecord.objects.get(session_id=rig.session.pk, kind="step")
    assert (row.input_tokens, row.output_tokens) == (first["input"], first["output"])
    assert row.tokens_estimated  # the ledger says the figure is Hangar's count, not the server's
    assert rig.state().tokens["output"] == 250

    rig.prompt("again")
    rig.run(model)
    assert rig.assistants()[-1]["tokens"]["input"] == 7  # a reported figure is kept as reported
    assert rig.assistants()[-1]["tokens"]["output"] == 2
    rows = UsageRecord.objects.filter(session_id=rig.session.pk, kind="step").order_by("pk")
    assert [r.tokens_estimated for r in rows] == [True, False]
    # Where usage is read (the API's report, its CSV), the estimated calls are counted apart.
    from hangar.usage.selectors import usage_report

    day = row.created_at.date()
    report = usage_report(org=rig.session.org, start=day, end=day, group="model")
    assert report["totals"]["estimated_calls"] == 1 and report["totals"]["calls"] >= 2  # (+ the title's)
