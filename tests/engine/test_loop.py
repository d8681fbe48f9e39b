"""The loop end to end: a real Celery worker, the model streaming over HTTP from the scripted server (the
direct OpenAI-compatible adapter, and LiteLLM for the multi-step session too), tools in the real Docker
sandbox, parts and events in Postgres."""

import pytest

from hangar.conversations.models import Event, Part, Session
from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from hangar.engine.session import readmarks
from hangar.engine.workspace.sandboxes import manager
from tests.engine.conftest import assistant_messages, text_of, text_prompt, tool_parts, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


@pytest.mark.parametrize("gateway", ["direct", "litellm"])
def test_a_multi_step_session_writes_runs_and_edits_files_in_the_sandbox(
    alice, script, make_session, start_worker, gateway
):
    start_worker(env={"HANGAR_DIRECT_OPENAI_COMPAT": "1" if gateway == "direct" else "0"})
    script_id = script.load(
        [
            [
                {"text": "I'll write the file."},
                call("write", "c1", filePath="/workspace/hello.py", content="print('hello')\n"),
            ],
            [call("bash", "c2", command="python3 hello.py", description="run it")],
            [
                call(
                    "edit",
                    "c3",
                    filePath="/workspace/hello.py",
                    oldString="print('hello')",
                    newString="print('hello, world')",
                )
            ],
            [call("bash", "c4", command="python3 hello.py", description="run again")],
            [{"text": "Done: hello.py prints hello, world."}],
        ],
        title="Write and run hello.py",
    )
    session = make_session(alice, script_id)

    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write hello.py and run it"))
    session = wait_idle(session)

    tools = tool_parts(session)
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("write", "completed"),
        ("bash", "completed"),
        ("edit", "completed"),
        ("bash", "completed"),
    ]
    assert "hello" in tools[1]["state"]["output"]
    assert "hello, world" in tools[3]["state"]["output"]
    assert (
        manager().connect(session.pk).read("/workspace/hello.py").content.strip() == "print('hello, world')"
    )
    assert text_of(session).endswith("Done: hello.py prints hello, world.")
    messages = assistant_messages(session)
    assert len(messages) == 5 and [m["finish"] for m in messages] == ["tool-calls"] * 4 + ["stop"]
    assert all(m["time"].get("completed") for m in messages)
    # Which client sent the five model calls: our adapter, or LiteLLM.
    agents = {r["_user_agent"].split("/")[0] for r in script.requests(script_id) if r.get("stream")}
    assert agents == {"hangar" if gateway == "direct" else "litellm"}


def test_each_step_has_step_start_step_finish_with_tokens_and_cost_and_a_patch_when_files_change(
    alice, script, make_session, worker, settings
):
    script_id = script.load(
        [
            [
                call("write", "c1", filePath="/workspace/a.txt", content="a\n"),
                {"usage": {"prompt_tokens": 1000, "completion_tokens": 200}},
            ],
            [{"text": "ok"}, {"usage": {"prompt_tokens": 1500, "completion_tokens": 10}}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write a.txt"))
    session = wait_idle(session)

    finishes = [p.data for p in Part.objects.filter(session=session, type="step-finish").order_by("id")]
    assert [f["reason"] for f in finishes] == ["tool-calls", "stop"]
    assert finishes[0]["tokens"]["input"] == 1000 and finishes[0]["tokens"]["output"] == 200
    assert Part.objects.filter(session=session, type="step-start").count() == 2
    patch = Part.objects.get(session=session, type="patch").data
    assert patch["files"] == ["/workspace/a.txt"]
    assert session.tokens["input"] == 2500


def test_cost_comes_from_the_per_model_price_override(alice, script, make_session, start_worker):
    # The worker reads HANGAR_MODEL_PRICES from its settings: priced here through the env it inherits.
    import json
    import os

    script_id = script.load([[{"text": "ok"}, {"usage": {"prompt_tokens": 1000, "completion_tokens": 500}}]])
    os.environ["HANGAR_MODEL_PRICES"] = json.dumps(
        {f"scripted/{script_id}": {"input": 0.001, "output": 0.002}}
    )
    try:
        start_worker()
    finally:
        del os.environ["HANGAR_MODEL_PRICES"]
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("price me"))
    session = wait_idle(session)
    finish = Part.objects.get(session=session, type="step-finish").data
    assert finish["cost"] == pytest.approx(1000 * 0.001 + 500 * 0.002)
    assert session.cost == pytest.approx(2.0)


def test_the_first_reply_gets_a_title_of_at_most_fifty_characters(alice, script, make_session, worker):
    script_id = script.load(
        [[{"text": "hi"}]], title="Greeting the agent and asking for a very long title indeed"
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))
    session = wait_idle(session)
    assert session.title == "Greeting the agent and asking for a very long titl"[:50].rstrip()
    assert len(session.title) <= 50
    assert Event.objects.filter(session=session, type="session.updated").exists()
    title_request = [r for r in script.requests(script_id) if not r.get("stream")]
    assert title_request and "title generator" in title_request[0]["messages"][0]["content"]


def test_the_model_is_sent_the_system_prompt_tools_and_tool_results(alice, script, make_session, worker):
    script_id = script.load(
        [[call("bash", "c1", command="echo marker-42", description="echo")], [{"text": "ok"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("echo something"))
    wait_idle(session)
    streamed = [r for r in script.requests(script_id) if r.get("stream")]
    first, second = streamed
    assert first["messages"][0]["role"] == "system" and "Hangar" in first["messages"][0]["content"]
    assert "<env>" in first["messages"][1]["content"]
    assert {t["function"]["name"] for t in first["tools"]} >= {
        "bash",
        "read",
        "write",
        "edit",
        "glob",
        "grep",
    }
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "c1" and "marker-42" in tool_message["content"]


def test_an_existing_file_is_written_only_after_the_agent_read_it_and_the_next_run_remembers(
    alice, script, make_session, worker
):
    # The read marks live in Redis: a second prompt (a new run, possibly on another worker) keeps them.
    script_id = script.load(
        [
            [call("bash", "c1", command="echo old > notes.txt", description="make a file")],
            [call("write", "c2", filePath="/workspace/notes.txt", content="new\n")],
            [call("read", "c3", filePath="/workspace/notes.txt")],
            [{"text": "read it"}],
            [call("write", "c4", filePath="/workspace/notes.txt", content="new\n")],
            [{"text": "written"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("rewrite notes"))
    wait_idle(session)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("now write it"))
    wait_idle(session)
    write_first, write_again = [t for t in tool_parts(session) if t["tool"] == "write"]
    assert write_first["state"]["status"] == "error" and "You must read file" in write_first["state"]["error"]
    assert write_again["state"]["status"] == "completed"
    assert manager().connect(session.pk).read("/workspace/notes.txt").content.strip() == "new"
    other = make_session(
        alice,
        script.load([[call("write", "c1", filePath="/workspace/notes.txt", content="x")], [{"text": "ok"}]]),
    )
    assert not readmarks.was_read(other.pk, "/workspace/notes.txt")  # marks are per session


def reminders(request: dict) -> list[str]:
    """The mid-conversation system messages of a request as the scripted server (provider "scripted",
    no native mid-conversation system role) receives them: wrapped user messages."""
    prefix = "<system-reminder>\n"
    return [
        m["content"][len(prefix) : -len("\n</system-reminder>")]
        for m in request["messages"]
        if m["role"] == "user" and m["content"].startswith(prefix) and "The user sent" not in m["content"]
    ]


def test_instruction_files_a_step_changes_are_told_once_the_baseline_untouched(
    alice, script, make_session, worker
):
    # AGENTS.md is read once per run and again only after a step changed it (by any tool, bash included);
    # each change is one mid-conversation system message, the system texts stay byte for byte the same.
    script_id = script.load(
        [
            [call("write", "c1", filePath="/workspace/AGENTS.md", content="Always say rule-one.\n")],
            [call("read", "c2", filePath="/workspace/AGENTS.md")],
            [call("bash", "c3", command="echo 'Always say rule-two.' > AGENTS.md", description="rewrite")],
            [{"text": "ok"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("set up instructions"))
    wait_idle(session)
    requests = [r for r in script.requests(script_id) if r.get("stream")]
    assert len(requests) == 4
    systems = [[m for m in r["messages"] if m["role"] == "system"] for r in requests]
    assert systems[0] == systems[1] == systems[2] == systems[3]
    assert "Instructions from" not in str(systems[0])
    assert reminders(requests[0]) == []
    [one] = reminders(requests[1])
    assert "Instructions from: /workspace/AGENTS.md\nAlways say rule-one." in one
    assert reminders(requests[2]) == [one]
    assert requests[1]["messages"][-2]["role"] == "tool"  # the tool's result, then the update
    [_, two] = reminders(requests[3])
    assert "Always say rule-two." in two and "rule-one" not in two


def test_skills_in_the_workspace_are_told_to_the_model_from_the_next_run(alice, script, make_session, worker):
    script_id = script.load(
        [
            [
                call(
                    "write",
                    "c1",
                    filePath="/workspace/.opencode/skills/lint/SKILL.md",
                    content="# Lint\nRun ruff.\n",
                )
            ],
            [{"text": "skill written"}],
            [{"text": "ok"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("add a lint skill"))
    wait_idle(session)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("what skills do you have?"))
    wait_idle(session)
    requests = [r for r in script.requests(script_id) if r.get("stream")]
    assert len(requests) == 3
    assert "<available_skills>" not in str(requests[0]["messages"])
    [told] = reminders(requests[1])  # the step after the write sees it (a step changed .opencode/skills)
    assert "<name>lint</name>" in told and "/workspace/.opencode/skills/lint/SKILL.md" in told
    assert reminders(requests[2]) == [told]


def test_the_baseline_system_context_is_reused_byte_for_byte_across_a_worker_restart(
    alice, script, make_session, start_worker
):
    script_id = script.load([[{"text": "first"}], [{"text": "second"}]])
    session = make_session(alice, script_id)
    first_worker = start_worker()
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))
    wait_idle(session)
    first_worker.stop()
    # While no worker runs, the workspace's instructions change: a fresh rendering would differ.
    manager().connect(session.pk).write("/workspace/AGENTS.md", "Prefer tabs.\n")
    start_worker()
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("again"))
    wait_idle(session)
    before, after = [r for r in script.requests(script_id) if r.get("stream")]
    leading = [[m for m in r["messages"] if m["role"] == "system"] for r in (before, after)]
    assert leading[0] == leading[1] and "Prefer tabs" not in str(leading[0])
    [told] = reminders(after)
    assert "Instructions from: /workspace/AGENTS.md\nPrefer tabs." in told
    assert after["messages"][-2] == {"role": "user", "content": "again"}  # the new prompt, then the update


def test_a_tenant_cannot_prompt_another_orgs_session(alice, charlie, script, make_session):
    from hangar.errors import NotFound

    session = make_session(alice, script.load([[{"text": "hi"}]]))
    with pytest.raises(NotFound):
        session_prompt(actor=charlie.actor, session=session, parts=text_prompt("let me in"))
    assert not Session.objects.get(pk=session.pk).run_requested
    assert not session.messages.exists()


def test_a_session_without_a_credential_says_so_and_goes_idle(alice, worker):
    session = session_create(
        actor=alice.actor,
        project=alice.project,
        model={"providerID": "nobody-configured-this", "modelID": "m"},
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))
    session = wait_idle(session)
    error = Event.objects.filter(session=session, type="session.error").get().payload["error"]
    assert error["name"] == "ProviderAuthError" and "no credential" in error["data"]["message"]
    assert not session.abort_requested and session.lease_owner == ""
