"""Skills from the workspace (`.opencode/skills/<name>/SKILL.md`) in a real worker with the Docker sandbox
and the scripted model: listed in the system prompt with their descriptions, loaded by the `skill` tool,
held back (neither listed nor loadable) where the rules deny them, and the tool not offered at all when
there is nothing to load."""

from __future__ import annotations

import pytest

from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import text_prompt, tool_parts, wait_idle
from tests.engine.test_subagents import oc_client
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db(transaction=True)

RELEASE = "---\nname: release\ndescription: Cut a release of this project\n---\nRun make release, then tag v$VERSION.\n"
SECRET = "---\ndescription: Rotate the production keys\n---\nNever run this.\n"


def skill_call(call_id: str, name: str) -> dict:
    return {"tool_calls": [{"name": "skill", "id": call_id, "arguments": {"name": name}}]}


def agent_calls(requests: list[dict]) -> list[dict]:
    return [r for r in requests if r.get("tools")]


def test_a_skill_is_listed_loaded_and_denied_where_the_rules_say(
    alice, charlie, script, make_session, worker
):
    alice.project.permission_rules = [{"permission": "skill", "pattern": "secret-*", "action": "deny"}]
    alice.project.save()
    turns = script.load([[skill_call("k1", "release")], [skill_call("k2", "secret-keys")], [{"text": "ok"}]])
    session = make_session(alice, turns)
    box = sandbox_for(session)
    box.write("/workspace/.opencode/skills/release/SKILL.md", RELEASE)
    box.write("/workspace/.opencode/skills/secret-keys/SKILL.md", SECRET)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("ship it"))
    session = wait_idle(session)

    first = agent_calls(script.requests(turns))[0]
    system = "\n".join(m["content"] for m in first["messages"] if m["role"] == "system")
    assert "<name>release</name>\n<description>Cut a release of this project</description>" in system
    assert "secret-keys" not in system  # denied: not even listed
    assert "skill" in {t["function"]["name"] for t in first["tools"]}
    loaded, denied = [p for p in tool_parts(session) if p["tool"] == "skill"]
    assert loaded["state"]["status"] == "completed" and loaded["state"]["title"] == "Loaded skill: release"
    assert loaded["state"]["output"].startswith(
        '<skill_content name="release">\n# Skill: release\n\nRun make release'
    )
    assert "Base directory for this skill: /workspace/.opencode/skills/release\n" in loaded["state"]["output"]
    assert denied["state"]["status"] == "error"
    assert "a rule which prevents you from using this specific tool call" in denied["state"]["error"]
    assert "Never run this" not in str(script.requests(turns))  # its instructions never reached the model
    # OpenCode's list, from the session's running workspace, in its shape; another org gets a 404.
    listed = oc_client(alice).get(f"{base_url(alice)}/skill")
    assert_response(listed, "/skill")
    assert [(s["name"], s["description"]) for s in listed.json()] == [
        ("release", "Cut a release of this project"),
        ("secret-keys", "Rotate the production keys"),
    ]
    assert listed.json()[0]["content"] == "Run make release, then tag v$VERSION."
    assert oc_client(charlie).get(f"{base_url(alice)}/skill").status_code == 404


def test_without_skills_the_tool_is_not_offered(alice, script, make_session, worker):
    turns = script.load([[{"text": "hello"}]])
    session = make_session(alice, turns)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"))
    wait_idle(session)
    (request,) = agent_calls(script.requests(turns))
    names = {t["function"]["name"] for t in request["tools"]}
    assert "skill" not in names and "read" in names
    assert "<available_skills>" not in str(request["messages"][0])
