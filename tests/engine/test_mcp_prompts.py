"""MCP servers' tool-list changes, prompts and resources, through the real worker, the real Docker sandbox and
the scripted model, against real servers: our SDK server over Streamable HTTP (tests/engine/mcp_server.py)
and the stdio one run in the sandbox by its agent (tests/engine/stdio_mcp_server.py).

A tool call that makes a server add a tool (and send tools/list_changed) is followed by a step offering and
calling the new tool; a run's catalog does not list again without a change. The servers' prompts are
OpenCode commands named `<server>:<prompt>`, and running one sends the prompt's text to the model; their
resources are listed by /experimental/resource, and a prompt's file part whose source is a resource gives
the model its text, a project secret in it masked; a resource of a server the session does not have is
said, not asked for. Another org's member gets a 404 from each of those routes."""

from __future__ import annotations

import base64
import json
import threading

import pytest
from rest_framework.test import APIClient

from hangar.accounts.org_policy_services import org_mcp_policy_set
from hangar.audit.models import AuditEvent
from hangar.conversations.loop_selectors import session_for_run
from hangar.conversations.models import Part
from hangar.engine.command_services import session_command
from hangar.engine.mcp.tools import McpCatalog
from hangar.engine.services import PromptRejected, session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects.env_var_services import env_var_set
from hangar.projects.services import project_update
from tests.engine.conftest import text_prompt, tool_parts, wait_idle
from tests.engine.test_mcp_tools import STDIO_SERVER, TOKEN, McpServer, call, configure, offered
from tests.opencode.conftest import assert_matches, assert_response, base_url, schema_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def mcp_server():
    server = McpServer()
    yield server
    server.stop()


def oc(persona) -> APIClient:
    """A client of the OpenCode routes as `opencode --attach` is (tests/opencode/conftest.py's `oc`)."""
    client = APIClient()
    basic = base64.b64encode(f"opencode:{persona.token}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    return client


def resource_part(server: str, name: str, uri: str) -> dict:
    """A file part as OpenCode's TUI attaches an MCP resource."""
    source = {
        "type": "resource",
        "clientName": server,
        "uri": uri,
        "text": {"value": f"@{name}", "start": 0, "end": 6},
    }
    return {"type": "file", "mime": "text/plain", "filename": name, "url": uri, "source": source}


def sent_with(script, script_id: str, text: str) -> str:
    """The messages of the model request (not a title's) that carried `text`; an AssertionError if none."""
    sent = [json.dumps(r["messages"]) for r in script.requests(script_id)]
    found = [m for m in sent if text in m and "title generator" not in m]
    assert found, f"no request carried {text!r}: {sent}"
    return found[-1]


def test_a_run_lists_a_servers_tools_again_only_after_it_said_they_changed(
    alice, script, make_session, mcp_server
):
    configure(alice, mcp_server)
    session = session_for_run(make_session(alice, script.load([[{"text": "unused"}]])).pk)
    catalog = McpCatalog()
    first = catalog.tools(session, set())
    assert "tools_grown" not in first
    assert catalog.tools(session, set()) is first  # no change said: the same list, not listed again
    first["tools_grow"].server.call_tool("grow", {}, threading.Event())
    again = catalog.tools(session, set())
    assert again is not first and again["tools_grown"].description.startswith("A tool that did not exist")
    assert catalog.tools(session, set()) is again


def test_a_remote_server_adds_a_tool_and_its_prompt_and_resource_reach_the_model(
    alice, charlie, script, make_session, worker, mcp_server
):
    configure(alice, mcp_server)
    script_id = script.load(
        [
            [call("c1", "tools_grow")],
            [call("c2", "tools_grown")],
            [{"text": "grew"}],
            [{"text": "reviewed"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("grow a tool"))
    session = wait_idle(session)

    assert "tools_grown" not in offered(script, script_id, 0)
    assert "tools_grown" in offered(script, script_id, 1)  # the very next step
    grow, grown = tool_parts(session)
    assert grow["state"]["output"] == "grew a tool"
    assert grown["state"]["status"] == "completed", grown["state"]
    assert grown["state"]["output"] == "the grown tool answered"

    url = base_url(alice)
    commands = oc(alice).get(f"{url}/command")
    assert_response(commands, "/command")
    assert [c for c in commands.json() if c.get("source") == "mcp"] == [
        {
            "name": "tools:review",
            "source": "mcp",
            "template": "",
            "description": "Review a topic.",
            "hints": ["$1", "$2"],
        }
    ]
    resources = oc(alice).get(f"{url}/experimental/resource")
    assert_response(resources, "/experimental/resource")
    assert resources.json() == {
        "tools:readme": {
            "name": "readme",
            "uri": "notes://readme",
            "description": "The project notes.",
            "mimeType": "text/plain",
            "client": "tools",
        }
    }
    assert oc(charlie).get(f"{url}/command").status_code == 404
    assert oc(charlie).get(f"{url}/experimental/resource").status_code == 404
    foreign = oc(charlie).post(
        f"{url}/session/{session.pk}/command", {"command": "tools:review", "arguments": "x"}, format="json"
    )
    assert foreign.status_code == 404

    with pytest.raises(PromptRejected) as missing:
        session_command(actor=alice.actor, session=session, command="tools:review", arguments="")
    assert missing.value.field == "arguments" and "topic" in str(missing.value)
    with pytest.raises(PromptRejected) as unknown:
        session_command(actor=alice.actor, session=session, command="tools:nothing", arguments="x")
    assert unknown.value.field == "command"

    readme = resource_part("tools", "readme", "notes://readme")
    session_command(
        actor=alice.actor,
        session=session,
        command="tools:review",
        arguments='"the parser" stern',
        files=[readme],
    )
    session = wait_idle(session)
    # The arguments fill the prompt's in order, quotes grouping words, as OpenCode fills $1, $2.
    sent = sent_with(script, script_id, "Please review the parser in a stern tone.")
    assert "Reading MCP resource: readme (notes://readme)" in sent
    assert "README-RESOURCE-CONTENT: the notes say hello" in sent
    assert "/tools:review" not in sent  # the command line became the prompt's text
    texts = [p.data for p in Part.objects.filter(session=session, type="text").order_by("id")]
    prompt_part = next(t for t in texts if "mcpPrompt" in (t.get("metadata") or {}))
    assert prompt_part["metadata"] == {"mcpPrompt": {"server": "tools", "name": "review"}}
    (file_part,) = Part.objects.filter(session=session, type="file")
    assert (
        file_part.data["source"]["type"] == "resource" and file_part.data["source"]["clientName"] == "tools"
    )

    audits = [
        (a.data["server"], a.data["tool"], a.data["ok"]) for a in AuditEvent.objects.filter(action="mcp.call")
    ]
    assert ("tools", "prompts/get", True) in audits and ("tools", "resources/read", True) in audits
    assert not Part.objects.filter(session_id=session.pk, data__icontains=TOKEN).exists()

    # A server the project no longer names lists nothing, at once (not only after the next run).
    project_update(actor=alice.actor, project=alice.project, mcp={})
    assert not [c for c in oc(alice).get(f"{url}/command").json() if c.get("source") == "mcp"]
    assert oc(alice).get(f"{url}/experimental/resource").json() == {}


def test_a_local_server_adds_a_tool_and_its_prompt_and_resource_reach_the_model(
    alice, script, make_session, worker
):
    command = ["python3", "/workspace/.mcp/server.py"]
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"local": ["python3 /workspace/.mcp/*"]})
    project_update(
        actor=alice.actor, project=alice.project, mcp={"stdio": {"type": "local", "command": command}}
    )
    script_id = script.load(
        [
            [call("c1", "stdio_grow")],
            [call("c2", "stdio_grown")],
            [{"text": "grew"}],
            [call("c3", "stdio_whoami")],
            [{"text": "again"}],
            [{"text": "greeted"}],
        ]
    )
    session = make_session(alice, script_id)
    box = sandbox_for(session)
    box.write("/workspace/.mcp/server.py", STDIO_SERVER.read_text())
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("grow a tool"))
    session = wait_idle(session)

    assert "stdio_grown" not in offered(script, script_id, 0)
    assert "stdio_grown" in offered(script, script_id, 1)
    _, grown = tool_parts(session)
    assert grown["state"]["status"] == "completed", grown["state"]
    assert grown["state"]["output"] == "the local grown tool answered"

    session_prompt(actor=alice.actor, session=session, parts=text_prompt("who are you"))
    session = wait_idle(session)
    # Listed at each run's first step and once after the change: the second run's client, which starts
    # knowing no version, takes the one its first answer carries and does not list again at its next step.
    asked = box.read_bytes("/tmp/stdio-mcp-methods").decode().split()
    assert asked.count("tools/list") == 3, asked

    url = base_url(alice)
    mcp_commands = [c for c in oc(alice).get(f"{url}/command").json() if c.get("source") == "mcp"]
    assert mcp_commands == [
        {
            "name": "stdio:greet",
            "source": "mcp",
            "template": "",
            "description": "Greet someone.",
            "hints": ["$1"],
        }
    ]
    assert oc(alice).get(f"{url}/experimental/resource").json() == {
        "stdio:today": {"name": "today", "uri": "memo://today", "mimeType": "text/plain", "client": "stdio"}
    }

    memo = resource_part("stdio", "today", "memo://today")
    session_command(actor=alice.actor, session=session, command="stdio:greet", arguments="Ada", files=[memo])
    session = wait_idle(session)
    sent = sent_with(script, script_id, "Say hello to Ada.")
    assert "MEMO-RESOURCE-CONTENT: buy milk" in sent


def test_a_resources_secret_is_masked_and_an_unknown_server_is_said_not_asked(
    alice, script, make_session, worker, mcp_server
):
    configure(alice, mcp_server)
    env_var_set(actor=alice.actor, project=alice.project, name="NOTES_KEY", value="README-RESOURCE-CONTENT")
    script_id = script.load([[{"text": "read"}]])
    session = make_session(alice, script_id)
    with pytest.raises(PromptRejected):  # a source that names no server is a 400, stored nowhere
        bad = {**resource_part("tools", "readme", "notes://readme")}
        bad["source"] = {**bad["source"], "clientName": "../tools"}
        session_prompt(actor=alice.actor, session=session, parts=[*text_prompt("read"), bad])
    ghost = resource_part("ghost", "plans", "ghost://plans")
    del ghost["source"]["text"]  # OpenCode's shape requires it: stored empty
    parts = [*text_prompt("read these"), resource_part("tools", "readme", "notes://readme"), ghost]
    session_prompt(actor=alice.actor, session=session, parts=parts)
    wait_idle(session)

    sent = sent_with(script, script_id, "Reading MCP resource: readme (notes://readme)")
    assert "***: the notes say hello" in sent and "README-RESOURCE-CONTENT" not in sent
    assert "Failed to read MCP resource plans: the MCP server ghost is not available to this session." in sent
    stored = json.dumps([p.data for p in Part.objects.filter(session=session)])
    assert "README-RESOURCE-CONTENT" not in stored
    files = [p.data for p in Part.objects.filter(session=session, type="file").order_by("id")]
    assert files[1]["source"]["text"] == {"value": "", "start": 0, "end": 0}
    for stored_part in files + [p.data for p in Part.objects.filter(session=session, type="text")]:
        assert_matches(stored_part, schema_of("FilePart" if stored_part["type"] == "file" else "TextPart"))
    assert [a.data["server"] for a in AuditEvent.objects.filter(action="mcp.call")] == ["tools"]


def test_a_local_server_without_prompts_or_resources_is_not_asked_for_them(
    alice, script, make_session, worker
):
    command = ["python3", "/workspace/.mcp/server.py"]
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"local": ["python3 /workspace/.mcp/*"]})
    server = {"type": "local", "command": command, "environment": {"ONLY_TOOLS": "1"}}
    project_update(actor=alice.actor, project=alice.project, mcp={"stdio": server})
    script_id = script.load([[{"text": "nothing to do"}]])
    session = make_session(alice, script_id)
    box = sandbox_for(session)
    box.write("/workspace/.mcp/server.py", STDIO_SERVER.read_text())
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))
    wait_idle(session)

    assert "stdio_whoami" in offered(script, script_id)
    asked = box.read_bytes("/tmp/stdio-mcp-methods").decode().split()
    assert asked == ["initialize", "notifications/initialized", "tools/list"], asked
