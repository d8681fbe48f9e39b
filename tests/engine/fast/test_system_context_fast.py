"""The durable system context (hangar.engine.turn.system_context, seed 001), in process: one stored baseline per
context epoch sent verbatim on every turn, a changed source told once in a mid-conversation system
message, a new epoch after a compaction or a revert, nested instructions, and unavailable context."""

from __future__ import annotations

import pytest

from hangar.conversations.models import ContextEpoch, Event, Message
from hangar.conversations.revert_services import session_revert_mark
from hangar.engine.providers.wire import wire_messages
from hangar.engine.turn import system_context
from hangar.engine.turn.system_context import SOURCES, read_directories, reconcile, render_baseline
from hangar.projects.models import Project
from sandbox.protocol import SandboxUnavailable
from tests.engine.fast.scripted_model import ScriptedModel, call

pytestmark = [pytest.mark.fast, pytest.mark.django_db]

RULE_ONE = "Instructions from: /workspace/AGENTS.md\nAlways say rule-one."


def system_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "system"]


def epochs(rig) -> list[ContextEpoch]:
    return list(ContextEpoch.objects.filter(session=rig.session).order_by("number"))


def test_the_baseline_is_sent_verbatim_and_a_changed_agents_md_is_told_once_in_order(rig):
    rig.prompt("set up instructions")
    model = ScriptedModel(
        [
            [call("write", "c1", filePath="/workspace/AGENTS.md", content="Always say rule-one.\n")],
            [call("bash", "c2", command="true", description="nothing")],
            [{"text": "done"}],
        ]
    )
    rig.run(model)

    first, second, third = model.requests
    assert first["system"] == second["system"] == third["system"]  # byte for byte: the cache prefix holds
    assert "Instructions from" not in "".join(first["system"])
    # The tool's result first, then the update with the file's full text (seed 001's order).
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "system"]
    update = second["messages"][-1]["content"]
    assert update.startswith("The instructions in effect changed.") and RULE_ONE in update
    assert system_messages(third) == [update]  # told once, kept in its place in the history
    [epoch] = epochs(rig)
    assert epoch.baseline == first["system"] and len(epoch.updates) == 1
    assert epoch.snapshot["instructions"] == [["/workspace/AGENTS.md", "Always say rule-one."]]


def test_a_new_run_sends_the_stored_baseline_and_tells_only_what_changed(rig, monkeypatch):
    # Every run is a new Loop (as after a worker restart): the baseline comes from the store, not memory.
    monkeypatch.setattr(system_context.time, "strftime", lambda _fmt: "Mon Nov 23 2026")
    rig.prompt("hello")
    first = ScriptedModel([[{"text": "hi"}]])
    rig.run(first)
    assert "Today's date: Mon Nov 23 2026" in first.requests[0]["system"][1]

    monkeypatch.setattr(system_context.time, "strftime", lambda _fmt: "Tue Nov 24 2026")
    rig.sandbox.write("/workspace/AGENTS.md", "Use tabs.\n")
    rig.prompt("again")
    second = ScriptedModel([[{"text": "ok"}]])
    rig.run(second)

    assert second.requests[0]["system"] == first.requests[0]["system"]
    messages = second.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "system"]
    update = messages[-1]["content"]  # two sources changed: one message
    assert "Today's date is now Tue Nov 24 2026." in update
    assert "Instructions from: /workspace/AGENTS.md\nUse tabs." in update
    assert "Mon Nov 23" not in update  # the newly effective state only (seed 001's dialogue)
    assert len(epochs(rig)) == 1


def test_an_unchanged_context_writes_nothing(rig):
    rig.prompt("one")
    rig.run(ScriptedModel([[{"text": "a"}]]))
    updated = ContextEpoch.objects.get(session=rig.session)
    rig.prompt("two")
    rig.run(ScriptedModel([[{"text": "b"}]]))
    again = ContextEpoch.objects.get(session=rig.session)
    assert again.updates == [] and again.snapshot == updated.snapshot and again.pk == updated.pk


def test_a_completed_compaction_starts_a_new_epoch_with_the_current_context(rig):
    Project.objects.filter(pk=rig.persona.project.pk).update(
        model_limits={"scripted/fast": {"context": 10_000, "output": 1_000}}
    )
    rig.prompt("build the thing")
    model = ScriptedModel(
        [
            [call("write", "c1", filePath="/workspace/AGENTS.md", content="Always say rule-one.\n")],
            [call("bash", "c2", command="true", description="x"), {"usage": {"input": 9000, "output": 100}}],
            [{"text": "**Goal**: the thing"}, {"usage": {"input": 9100, "output": 300}}],
            [{"text": "all done"}, {"usage": {"input": 400, "output": 10}}],
        ]
    )
    rig.run(model)

    _, before, compaction, after = model.requests
    # The compaction is sent the epoch's update with the history it summarises.
    assert any(RULE_ONE in text for text in system_messages(compaction))
    # The next turn: a fresh baseline holding the instructions, and no earlier update in the history.
    assert after["system"] != before["system"] and RULE_ONE in after["system"][1]
    assert system_messages(after) == []
    old, new = epochs(rig)
    assert len(old.updates) == 1 and new.updates == [] and new.boundary != old.boundary


def test_a_revert_that_removes_what_an_update_followed_starts_a_new_epoch(rig):
    rig.prompt("write the rules")
    rig.run(
        ScriptedModel(
            [
                [call("write", "c1", filePath="/workspace/AGENTS.md", content="Always say rule-one.\n")],
                [{"text": "written"}],
            ]
        )
    )
    [epoch] = epochs(rig)
    anchor = Message.objects.get(pk=epoch.updates[0]["after"])
    # The mark alone (the files stay: tests/opencode/test_revert_fork.py restores them with Docker).
    session_revert_mark(
        actor=rig.persona.actor, session=rig.state(), revert={"messageID": anchor.pk}, diffs=[]
    )
    rig.prompt("start over")
    model = ScriptedModel([[{"text": "fresh"}]])
    rig.run(model)
    [request] = model.requests
    assert system_messages(request) == []
    assert [e.number for e in epochs(rig)] == [1, 2]
    assert RULE_ONE in request["system"][1]  # a fresh baseline says what is there now


def test_instructions_nested_where_the_agent_reads_are_told_at_the_next_turn(rig):
    rig.sandbox.write("/workspace/pkg/AGENTS.md", "Package rule.\n")
    rig.sandbox.write("/workspace/pkg/sub/mod.py", "x = 1\n")
    rig.prompt("look at mod.py")
    model = ScriptedModel([[call("read", "c1", filePath="/workspace/pkg/sub/mod.py")], [{"text": "seen"}]])
    rig.run(model)
    assert "Package rule" not in "".join(model.requests[0]["system"])
    [update] = system_messages(model.requests[1])
    assert "Instructions from: /workspace/pkg/AGENTS.md\nPackage rule." in update


def test_unavailable_instructions_keep_their_last_value_and_block_only_a_first_baseline(rig, monkeypatch):
    real_read = rig.sandbox.read

    def down(path, **kwargs):
        if path.endswith(("AGENTS.md", "CLAUDE.md")):
            raise SandboxUnavailable("the sandbox is restarting")
        return real_read(path, **kwargs)

    monkeypatch.setattr(rig.sandbox, "read", down)
    rig.prompt("hello")
    rig.run(ScriptedModel([]))  # no model call: the turn is not started on an incomplete baseline
    [error] = [
        e.payload["error"] for e in Event.objects.filter(session_id=rig.session.pk, type="session.error")
    ]
    assert error["name"] == "ContextUnavailable"
    [answer] = rig.assistants()  # the prompt is answered with the error, in OpenCode's shape
    assert answer["error"] == {"name": "UnknownError", "data": {"message": error["data"]["message"]}}
    assert rig.state().status == "idle" and epochs(rig) == []

    monkeypatch.setattr(rig.sandbox, "read", real_read)
    rig.sandbox.write("/workspace/AGENTS.md", "Always say rule-one.\n")
    rig.prompt("retry")
    first = ScriptedModel([[{"text": "hi"}]])
    rig.run(first)
    assert RULE_ONE in first.requests[0]["system"][1]

    monkeypatch.setattr(rig.sandbox, "read", down)
    rig.sandbox.write("/workspace/AGENTS.md", "Changed, but nobody can tell.\n")
    rig.prompt("later")
    later = ScriptedModel([[{"text": "ok"}]])
    rig.run(later)
    assert later.requests[0]["system"] == first.requests[0]["system"]
    assert system_messages(later.requests[0]) == []
    assert epochs(rig)[0].snapshot["instructions"] == [["/workspace/AGENTS.md", "Always say rule-one."]]


def test_reconcile_says_a_new_source_once_and_an_emptied_one_in_words():
    values = {"environment": {"model": "m", "provider": "p", "git": True}, "date": "d", "instructions": []}
    values["skills"] = ""
    # A source the snapshot lacks (added since the epoch began) says its baseline; empty says nothing.
    snapshot, text = reconcile({k: v for k, v in values.items() if k != "date"}, values)
    assert snapshot == values and text == "Today's date: d"
    removed, text = reconcile({**values, "instructions": [["/workspace/AGENTS.md", "x"]]}, values)
    assert removed == values and "no longer apply" in text
    assert reconcile(values, {**values, "skills": None}) == (values, None)  # unavailable: kept
    baseline = render_baseline("BASE", values)
    assert baseline[0] == "BASE" and "Is directory a git repo: yes" in baseline[1]
    assert [s.key for s in SOURCES] == ["environment", "date", "instructions", "skills"]


def test_read_directories_takes_completed_reads_inside_the_workspace():
    def read(path, status="completed"):
        return {"type": "tool", "tool": "read", "state": {"status": status, "input": {"filePath": path}}}

    parts = [
        read("/workspace/a/b/c.py"),
        read("rel/x.py"),
        read("/etc/passwd"),
        read("/workspace/../etc/x"),
        read("/workspace/top.py"),
        read("/workspace/failed/x.py", status="error"),
    ]
    assert read_directories([({"id": "m"}, parts)]) == ["a/b", "rel"]


def test_mid_conversation_system_messages_are_native_for_openai_and_wrapped_elsewhere():
    messages = [{"role": "user", "content": "hi"}, {"role": "system", "content": "date changed"}]
    assert wire_messages(["S"], messages, provider_id="openai")[1:] == messages
    wrapped = wire_messages(["S"], messages, provider_id="anthropic")
    assert wrapped[0] == {"role": "system", "content": "S"}
    assert wrapped[2] == {"role": "user", "content": "<system-reminder>\ndate changed\n</system-reminder>"}


def test_the_orgs_instructions_follow_the_workspaces_and_a_change_is_told(rig):
    from hangar.accounts.models import Org

    Org.objects.filter(pk=rig.persona.org.pk).update(instructions="Answer in French.")
    rig.sandbox.write("/workspace/AGENTS.md", "Always say rule-one.\n")
    rig.prompt("hello")
    first = ScriptedModel([[{"text": "bonjour"}]])
    rig.run(first)
    baseline = first.requests[0]["system"][1]
    assert baseline.index(RULE_ONE) < baseline.index("Instructions from: your organisation")
    assert "Answer in French." in baseline

    Org.objects.filter(pk=rig.persona.org.pk).update(instructions="")
    rig.prompt("again")
    second = ScriptedModel([[{"text": "ok"}]])
    rig.run(second)
    [update] = system_messages(second.requests[0])
    assert RULE_ONE in update and "French" not in update  # the complete set now in effect
