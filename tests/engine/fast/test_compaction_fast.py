"""The context window in the loop (hangar.engine.run.compaction), in process: overflow by the last step's usage,
pruning, compaction by the hidden agent, auto-continue, a provider's overflow error, and every way a
compaction that cannot help stops instead of looping. Small limits come from the project's model_limits."""

from __future__ import annotations

import pytest

from hangar.conversations.models import Event, Message, Part
from hangar.engine.providers.overflow import overflow_error
from hangar.engine.services import session_summarize
from hangar.engine.session.history import CLEARED
from hangar.engine.session.system import prompt_text
from hangar.projects.models import Project
from hangar.usage.models import UsageRecord
from tests.engine.fast.scripted_model import ScriptedModel, call

pytestmark = [pytest.mark.fast, pytest.mark.django_db]

SUMMARY = "**Goal**: build the thing\n**Accomplished**: ran echo"
WHAT_SO_FAR = {"role": "user", "content": "What did we do so far?"}


def small_window(rig, context: int = 10_000, output: int = 1_000) -> None:
    """usable = (context - output) - min(20000, output): 8,000 tokens with the defaults."""
    Project.objects.filter(pk=rig.persona.project.pk).update(
        model_limits={"scripted/fast": {"context": context, "output": output}}
    )


def events(rig, kind: str) -> list[dict]:
    return [e.payload for e in Event.objects.filter(session_id=rig.session.pk, type=kind).order_by("seq")]


def user_messages(rig) -> list[tuple[dict, list[dict]]]:
    messages = Message.objects.filter(session=rig.session, role="user").order_by("id")
    return [(m.data, [p.data for p in Part.objects.filter(message=m).order_by("id")]) for m in messages]


def test_a_step_whose_usage_fills_the_window_is_followed_by_a_compaction_and_the_work_goes_on(rig):
    small_window(rig)
    rig.prompt("build the thing")
    model = ScriptedModel(
        [
            [
                call("bash", "c1", command="echo hi", description="hi"),
                {"usage": {"input": 9000, "output": 100}},
            ],
            [{"text": SUMMARY}, {"usage": {"input": 9100, "output": 300}}],
            [{"text": "all done"}, {"usage": {"input": 400, "output": 10}}],
        ]
    )
    rig.run(model)

    compaction_call, after = model.requests[1], model.requests[2]
    assert compaction_call["system"] == [prompt_text("compaction")] and compaction_call["tools"] == []
    assert compaction_call["messages"][0] == {"role": "user", "content": "build the thing"}
    assert compaction_call["messages"][-1] == {"role": "user", "content": prompt_text("compaction_request")}
    for heading in (
        "**Goal**",
        "**Instructions**",
        "**Discoveries**",
        "**Accomplished**",
        "**Relevant files**",
    ):
        assert heading in compaction_call["messages"][-1]["content"]
    # The next step is sent the history from the summary on: the request, the summary, the synthetic continue.
    assert after["messages"] == [
        WHAT_SO_FAR,
        {"role": "assistant", "content": SUMMARY},
        {"role": "user", "content": prompt_text("compaction_continue")},
    ]
    assert "Continue if you have next steps" in prompt_text("compaction_continue")

    steps = rig.assistants()
    assert [(m["agent"], m["finish"], bool(m.get("summary"))) for m in steps] == [
        ("build", "tool-calls", False),
        ("compaction", "stop", True),
        ("build", "stop", False),
    ]
    summary = steps[1]
    assert summary["mode"] == "compaction" and summary["tokens"]["output"] == 300 and summary["cost"] > 0
    finishes = [p for p in rig.parts("step-finish") if p["messageID"] == summary["id"]]
    assert (
        len(finishes) == 1
        and finishes[0]["tokens"]["output"] == 300
        and finishes[0]["cost"] == summary["cost"]
    )
    users = user_messages(rig)
    assert [parts[0]["type"] for _info, parts in users] == ["text", "compaction", "text"]
    assert users[1][1][0]["auto"] is True and "overflow" not in users[1][1][0]
    assert users[2][1][0]["synthetic"] is True
    assert summary["parentID"] == users[1][0]["id"]
    assert events(rig, "session.compacted") == [{"sessionID": rig.session.pk}]
    session = rig.state()
    assert session.status == "idle"
    assert session.tokens["output"] == 100 + 300 + 10  # the compaction's tokens count for the session too
    ledger = UsageRecord.objects.filter(session_id=rig.session.pk).exclude(kind="title").order_by("id")
    assert [(r.kind, r.output_tokens) for r in ledger] == [("step", 100), ("compaction", 300), ("step", 10)]
    assert ledger[1].cost == summary["cost"] and ledger[1].outcome == "ok"


def big_output_turn(prefix: str, count: int) -> list[dict]:
    """One step running `count` commands that each print 48,000 characters (about 12,000 tokens); each
    differs, or the doom-loop guard would ask about the third."""
    return [
        {
            "tool_calls": [
                {
                    "name": "bash",
                    "id": f"{prefix}{i}",
                    "arguments": {
                        "command": f"head -c 48000 /dev/zero | tr '\\0' '{i}'",
                        "description": "big",
                    },
                }
                for i in range(count)
            ]
        }
    ]


def test_old_tool_outputs_beyond_the_protected_window_are_pruned_then_the_session_is_compacted(rig):
    small_window(rig, context=100_000, output=10_000)  # usable: 80,000 tokens
    script = [
        big_output_turn("a", 6),  # turn 1: six outputs of ~12,000 tokens each
        [{"text": "printed"}],
        [{"text": "noted"}],  # turn 2
        # turn 3: a step reports more than the window; pruning frees ~36,000 tokens, not enough.
        [
            call("bash", "c9", command="echo more", description="more"),
            {"usage": {"input": 150_000, "output": 50}},
        ],
        [{"text": SUMMARY}, {"usage": {"input": 40_000, "output": 500}}],
        [{"text": "continued"}],
    ]
    model = ScriptedModel(script)
    for text in ("print a lot", "thanks", "go on"):
        rig.prompt(text)
        rig.run(model)

    outputs = [p for p in rig.parts("tool") if p["callID"].startswith("a")]
    pruned = [p for p in outputs if p["state"]["time"].get("compacted")]
    # The newest 40,000 tokens are protected (a5..a2 reach 48,000: a2 is the first past the line).
    assert sorted(p["callID"] for p in pruned) == ["a0", "a1", "a2"]
    assert all(len(p["state"]["output"]) >= 48_000 for p in pruned)  # stored whole; only replay clears
    compaction_call = model.requests[4]
    tool_results = [m["content"] for m in compaction_call["messages"] if m["role"] == "tool"]
    assert tool_results[:3] == [CLEARED] * 3 and all(len(r) >= 48_000 for r in tool_results[3:6])
    assert model.requests[5]["messages"][0] == WHAT_SO_FAR
    assert len(events(rig, "session.compacted")) == 1
    assert rig.assistants()[-1]["finish"] == "stop" and rig.state().status == "idle"


def test_pruning_that_frees_enough_spares_the_compaction(rig):
    small_window(rig, context=100_000, output=10_000)
    model = ScriptedModel(
        [
            big_output_turn("a", 6),
            [{"text": "printed"}],
            [{"text": "noted"}],
            [
                call("bash", "c9", command="echo more", description="more"),
                {"usage": {"input": 85_000, "output": 50}},
            ],
            [{"text": "continued"}],
        ]
    )
    for text in ("print a lot", "thanks", "go on"):
        rig.prompt(text)
        rig.run(model)

    assert sum(1 for p in rig.parts("tool") if p["state"]["time"].get("compacted")) == 3
    assert [m["content"] for m in model.requests[4]["messages"] if m["role"] == "tool"][:3] == [CLEARED] * 3
    assert not any(m.get("summary") for m in rig.assistants())
    assert events(rig, "session.compacted") == []


def test_a_compaction_that_does_not_shrink_the_context_stops_with_a_clear_error(rig):
    small_window(rig)
    rig.prompt("build the thing")
    model = ScriptedModel(
        [
            [
                call("bash", "c1", command="echo hi", description="hi"),
                {"usage": {"input": 9000, "output": 100}},
            ],
            [{"text": "a summary as long as the conversation"}, {"usage": {"input": 9100, "output": 8500}}],
        ]
    )
    rig.run(model)  # the script has no third turn: a loop would fail the test here

    errors = events(rig, "session.error")
    assert len(errors) == 1 and errors[0]["error"]["name"] == "ContextOverflowError"
    assert "did not shrink the context enough" in errors[0]["error"]["data"]["message"]
    summary = rig.assistants()[-1]
    assert summary["summary"] is True and summary["error"]["name"] == "ContextOverflowError"
    assert summary["tokens"]["output"] == 8500  # the failed compaction's cost is still recorded
    assert [parts[0]["type"] for _info, parts in user_messages(rig)] == ["text", "compaction"]  # no continue
    assert events(rig, "session.compacted") == []
    assert rig.state().status == "idle"

    # The failed summary is no boundary: the next prompt tries again (a shorter summary this time).
    rig.prompt("and now?")
    retry = ScriptedModel([[{"text": SUMMARY}, {"usage": {"output": 200}}], [{"text": "ok"}]])
    rig.run(retry)
    assert retry.requests[0]["messages"][0] == {"role": "user", "content": "build the thing"}
    assert retry.requests[1]["messages"][:2] == [WHAT_SO_FAR, {"role": "assistant", "content": SUMMARY}]
    assert rig.assistants()[-1]["finish"] == "stop" and len(events(rig, "session.compacted")) == 1


def test_a_providers_overflow_error_compacts_instead_of_retrying(rig):
    small_window(rig)
    rig.prompt("build the thing")
    too_long = overflow_error("This model's maximum context length is 8192 tokens", status=400)
    model = ScriptedModel(
        [
            [call("bash", "c1", command="echo hi", description="hi")],
            [{"error": too_long}],
            [{"text": SUMMARY}, {"usage": {"input": 5000, "output": 200}}],
            [{"text": "all done"}],
        ]
    )
    rig.run(model)

    assert rig.parts("retry") == []
    steps = rig.assistants()
    assert (
        steps[1]["error"]["name"] == "ContextOverflowError" and "8192" in steps[1]["error"]["data"]["message"]
    )
    assert steps[2]["summary"] is True and steps[3]["finish"] == "stop"
    compaction_part = user_messages(rig)[1][1][0]
    assert compaction_part == {**compaction_part, "type": "compaction", "auto": True, "overflow": True}
    assert len(events(rig, "session.compacted")) == 1 and events(rig, "session.error") == []
    assert model.requests[3]["messages"][0] == WHAT_SO_FAR


def test_an_overflow_error_right_after_a_compaction_stops_instead_of_compacting_again(rig):
    small_window(rig)
    rig.prompt("build the thing")
    too_long = overflow_error("prompt is too long: 12000 tokens > 8192 maximum", status=400)
    model = ScriptedModel(
        [
            [
                call("bash", "c1", command="echo hi", description="hi"),
                {"usage": {"input": 9000, "output": 10}},
            ],
            [{"text": SUMMARY}, {"usage": {"input": 9000, "output": 200}}],
            [{"error": too_long}],
        ]
    )
    rig.run(model)

    errors = events(rig, "session.error")
    assert len(errors) == 1 and errors[0]["error"]["name"] == "ContextOverflowError"
    assert "still too large after compaction" in errors[0]["error"]["data"]["message"]
    assert len(model.requests) == 3 and rig.state().status == "idle"


def test_a_first_step_after_compaction_whose_prompt_alone_overflows_stops(rig):
    small_window(rig)
    rig.prompt("build the thing")
    model = ScriptedModel(
        [
            [
                call("bash", "c1", command="echo hi", description="hi"),
                {"usage": {"input": 9000, "output": 10}},
            ],
            [{"text": SUMMARY}, {"usage": {"input": 9000, "output": 200}}],
            [
                call("bash", "c2", command="echo again", description="again"),
                {"usage": {"input": 8500, "output": 5}},
            ],
        ]
    )
    rig.run(model)

    errors = events(rig, "session.error")
    assert len(errors) == 1 and "still too large after compaction" in errors[0]["error"]["data"]["message"]
    assert len(model.requests) == 3


def test_a_compaction_the_provider_refuses_as_too_long_stops_with_a_clear_error(rig):
    small_window(rig)
    rig.prompt("build the thing")
    model = ScriptedModel(
        [
            [
                call("bash", "c1", command="echo hi", description="hi"),
                {"usage": {"input": 9000, "output": 10}},
            ],
            [{"error": overflow_error("prompt is too long", status=400)}],
        ]
    )
    rig.run(model)

    errors = events(rig, "session.error")
    assert (
        len(errors) == 1 and "too large for the model to summarize" in errors[0]["error"]["data"]["message"]
    )
    assert len(model.requests) == 2 and rig.state().status == "idle"


def test_a_manual_summary_compacts_without_continuing_and_the_next_prompt_starts_from_it(rig):
    rig.prompt("build the thing")
    rig.run(ScriptedModel([[{"text": "built"}]]))
    session_summarize(actor=rig.persona.actor, session=rig.state())
    model = ScriptedModel([[{"text": SUMMARY}], [{"text": "next done"}]])
    rig.run(model)

    assert [parts[0]["type"] for _info, parts in user_messages(rig)] == ["text", "compaction"]
    assert user_messages(rig)[1][1][0]["auto"] is False
    assert rig.assistants()[-1]["summary"] is True and len(model.requests) == 1
    assert len(events(rig, "session.compacted")) == 1

    rig.prompt("next")
    rig.run(model)
    assert model.requests[1]["messages"] == [
        WHAT_SO_FAR,
        {"role": "assistant", "content": SUMMARY},
        {"role": "user", "content": "next"},
    ]


def test_a_last_step_that_fills_the_window_compacts_and_the_agent_goes_on_as_in_opencode(rig):
    # Issue 30: a 4,000-token model (1,000 output) and a ~1,000-line tool output compacted in OpenCode
    # 1.18.33 but not here. The tool's output made the *answering* step's prompt overflow, and that step
    # ended the turn ("stop"): the loop checked the window only before a next step. OpenCode's processor
    # checks every finished step, the turn's last included, then compacts and continues.
    small_window(rig, context=4_000, output=1_000)
    rig.prompt("list the numbers")
    model = ScriptedModel(
        [
            [
                call("bash", "c1", command="seq 1000", description="numbers"),
                {"usage": {"input": 300, "output": 20}},
            ],
            [{"text": "Here they are."}, {"usage": {"input": 2_400, "output": 10}}],
            [{"text": SUMMARY}, {"usage": {"input": 2_500, "output": 60}}],
            [{"text": "Nothing left to do."}, {"usage": {"input": 200, "output": 8}}],
        ]
    )
    rig.run(model)

    steps = rig.assistants()
    assert [(m["agent"], m["finish"], bool(m.get("summary"))) for m in steps] == [
        ("build", "tool-calls", False),
        ("build", "stop", False),
        ("compaction", "stop", True),
        ("build", "stop", False),
    ]
    (_, request), (_, continued) = user_messages(rig)[1:]
    assert request == [{**request[0], "type": "compaction", "auto": True}]
    assert continued[0]["text"] == prompt_text("compaction_continue") and continued[0]["synthetic"]
    assert len(events(rig, "session.compacted")) == 1
    assert rig.state().status == "idle" and len(model.requests) == 4


def test_a_last_step_within_the_window_ends_the_turn_without_compacting(rig):
    small_window(rig, context=4_000, output=1_000)
    rig.prompt("hello")
    model = ScriptedModel([[{"text": "hi"}, {"usage": {"input": 1_900, "output": 10}}]])  # usable is 2,000
    rig.run(model)
    assert [m["finish"] for m in rig.assistants()] == ["stop"] and not events(rig, "session.compacted")
