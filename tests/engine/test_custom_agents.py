# ruff: noqa: F811  (the fixtures imported below are the parameters of the tests)
"""Agents a team defines in its workspace (`.opencode/agents/<name>.md`: YAML frontmatter, then the
prompt), in a real worker with the Docker sandbox and the scripted model over HTTP: prompting one sends
its prompt as the system prompt and offers only the tools its permissions leave; as a subagent the task
tool lists and starts it; an unknown name or a file that does not parse is a 400 that says why."""

from __future__ import annotations

import pytest

from hangar.engine.agents.custom_agents import AgentConfigError, agent_from_fields, split_frontmatter
from hangar.engine.services import PromptRejected, session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import text_prompt, tool_parts, wait_idle
from tests.engine.test_subagents import calls, children_of, oc_client, routed_session, task  # noqa: F401
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db(transaction=True)

REVIEWER = """---
description: Reviews changes without editing them
mode: all
steps: 3
permission:
  edit: deny
  bash:
    "*": deny
    "git diff*": allow
---
You are Reviewer-7. Read, never write.
"""


def agent_calls(requests: list[dict]) -> list[dict]:
    """The agent's own model calls (the title's has no tools)."""
    return [r for r in requests if r.get("tools")]


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def system_text(request: dict) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def test_a_prompt_to_a_workspace_agent_uses_its_prompt_rules_and_steps(alice, script, make_session, worker):
    turns = script.load([[{"text": "looks fine"}]])
    session = make_session(alice, turns)
    sandbox_for(session).write("/workspace/.opencode/agents/reviewer.md", REVIEWER)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("review it"), agent="reviewer")
    session = wait_idle(session)
    (request,) = agent_calls(script.requests(turns))
    assert system_text(request).startswith("You are Reviewer-7. Read, never write.")
    offered = tool_names(request)
    assert {"read", "grep", "bash"} <= offered  # bash is allowed for `git diff*`
    assert not offered & {"edit", "write", "apply_patch"}  # edit: deny leaves them out
    assert session.agent == "reviewer"
    user = session.messages.filter(role="user").get()
    assert user.data["agent"] == "reviewer"
    # OpenCode's agent list (the TUI cycles through it) has it, from the newest session's workspace.
    listed = oc_client(alice).get(f"{base_url(alice)}/agent")
    assert_response(listed, "/agent")
    (mine,) = [a for a in listed.json() if a["name"] == "reviewer"]
    assert mine["native"] is False and mine["mode"] == "all" and mine["steps"] == 3
    assert mine["prompt"] == "You are Reviewer-7. Read, never write."


def test_the_task_tool_lists_and_starts_a_workspace_subagent(alice, script, routed_session, worker):
    kid = script.load([[{"text": "reviewed: ok"}]])
    parent = script.load(
        [calls(task("t1", "Review", f"[[script:{kid}]] review", "reviewer")), [{"text": "done"}]]
    )
    session = routed_session(alice)
    sandbox_for(session).write(
        "/workspace/.opencode/agents/reviewer.md", REVIEWER.replace("mode: all", "mode: subagent")
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"[[script:{parent}]] go"))
    session = wait_idle(session, timeout=120)
    first = agent_calls(script.requests(parent))[0]
    (task_tool,) = [t for t in first["tools"] if t["function"]["name"] == "task"]
    assert "- reviewer: Reviews changes without editing them" in task_tool["function"]["description"]
    (child,) = children_of(session)
    assert child.title == "Review (@reviewer)" and child.agent == "reviewer"
    (child_request,) = agent_calls(script.requests(kid))
    assert system_text(child_request).startswith("You are Reviewer-7.")
    (call,) = [p for p in tool_parts(session) if p["callID"] == "t1"]
    assert "reviewed: ok" in call["state"]["output"]


def test_an_unknown_agent_or_a_broken_file_is_refused_with_the_reason(alice, script, make_session, api):
    session = make_session(alice, script.load([[{"text": "never"}]]))
    with pytest.raises(PromptRejected, match="no agent named 'nobody': one of build, explore, general, plan"):
        session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"), agent="nobody")
    sandbox_for(session).write("/workspace/.opencode/agents/broken.md", "---\nmode: [unclosed\n---\nhi\n")
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{session.pk}/prompt/"
    response = api(alice).post(url, {"parts": text_prompt("hi"), "agent": "broken"}, format="json")
    assert response.status_code == 400, response.content
    message = " ".join(response.json()["error"]["fields"]["agent"])
    assert ".opencode/agents/broken.md: the frontmatter is not valid YAML" in message
    assert not session.messages.exists()  # nothing half-stored


@pytest.mark.parametrize(
    "text, problem",
    [
        ("---\nmode: boss\n---\n", "mode must be one of primary, subagent, all"),
        ("---\nsteps: 0\n---\n", "steps must be a whole number"),
        ("---\ntemperature: hot\n---\n", "temperature must be a number"),
        ("---\npermission: {edit: maybe}\n---\n", "needs a permission, pattern and allow/ask/deny"),
        ("---\nmodel: gpt4\n---\n", "model must be provider/model"),
        ("---\ncolour: red\n---\n", "unknown field(s) colour"),
        ("---\nmode: all\n", "the frontmatter is not closed"),
        ("---\n- a list\n---\n", "must be a mapping of fields"),
    ],
)
def test_each_bad_field_is_named(text, problem):
    with pytest.raises(AgentConfigError, match=None) as caught:
        meta, body = split_frontmatter(text, ".opencode/agents/x.md")
        agent_from_fields("x", meta, ".opencode/agents/x.md", prompt=body)
    assert str(caught.value).startswith(".opencode/agents/x.md: ") and problem in str(caught.value)


def test_fields_become_the_agent():
    meta, body = split_frontmatter(
        REVIEWER.replace("steps: 3", "steps: 3\nmodel: scripted/m1\ntools: {webfetch: false}"), "w"
    )
    agent = agent_from_fields("reviewer", meta, "w", prompt=body)
    assert (agent.mode, agent.steps, agent.native, agent.model) == (
        "all",
        3,
        False,
        {"providerID": "scripted", "modelID": "m1"},
    )
    assert agent.prompt_text == "You are Reviewer-7. Read, never write."
    assert agent.permission == [
        {"permission": "webfetch", "pattern": "*", "action": "deny"},
        {"permission": "edit", "pattern": "*", "action": "deny"},
        {"permission": "bash", "pattern": "*", "action": "deny"},
        {"permission": "bash", "pattern": "git diff*", "action": "allow"},
    ]


def test_a_project_agent_is_configured_checked_and_used(alice, charlie, script, make_session, worker, api):
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/"
    bad = api(alice).patch(url, {"agents": {"docs": {"mode": "boss"}}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["error"]["fields"]["agents.docs"] == ["mode must be one of primary, subagent, all"]
    docs = {
        "description": "Writes docs",
        "prompt": "You are the docs writer.",
        "permission": {"bash": "deny"},
    }
    saved = api(alice).patch(url, {"agents": {"docs": docs}}, format="json")
    assert saved.status_code == 200 and saved.json()["agents"] == {"docs": docs}
    assert api(charlie).patch(url, {"agents": {}}, format="json").status_code == 404

    turns = script.load([[{"text": "documented"}]])
    alice.project.refresh_from_db()  # as the API left it
    session = make_session(alice, turns)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("document it"), agent="docs")
    session = wait_idle(session)
    (request,) = agent_calls(script.requests(turns))
    assert system_text(request).startswith("You are the docs writer.")
    assert "bash" not in tool_names(request)
    assert "docs" in {a["name"] for a in oc_client(alice).get(f"{base_url(alice)}/agent").json()}
