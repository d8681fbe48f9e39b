"""MCP servers' tools through the real worker, the real Docker sandbox and the scripted model over HTTP,
against a small server of our own written with the official `mcp` SDK (tests/engine/mcp_server.py) run as
a local Streamable HTTP server: the model sees `<server>_<tool>` with the server's schema, a call's result
comes back bounded like a built-in tool's, a call is audited without its arguments, an org deny stops a
server's tools, an ask parks the run, a slow or crashing server fails the call and not the run, and the
project secret its header carries appears nowhere but in the request to the server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from docker import from_env

from hangar.accounts.org_policy_services import org_mcp_policy_set, org_permission_policy_set
from hangar.audit.models import AuditEvent
from hangar.conversations.loop_selectors import session_for_run
from hangar.conversations.models import Event, Part, PermissionRequest
from hangar.engine.mcp import status
from hangar.engine.mcp.tools import McpCatalog
from hangar.engine.reply_services import permission_reply
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects.env_var_services import env_var_set
from hangar.projects.models import Project
from hangar.projects.services import project_update
from sandbox import containers
from tests.engine.conftest import assistant_messages, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

SERVER = Path(__file__).with_name("mcp_server.py")
TOKEN = "mcp-secret-token-7f3a9c1e5b"


class McpServer:
    def __init__(self, token: str = TOKEN, transport: str = "streamable-http", port: int = 0):
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port just given up (a restart)
            probe.bind(("127.0.0.1", port))
            self.port = probe.getsockname()[1]
        if not port:  # a new server: what an earlier one on this port counted is not its own
            self._opens_file().unlink(missing_ok=True)
        sse = transport == "sse"
        self.url = f"http://127.0.0.1:{self.port}/{'sse' if sse else 'mcp'}"
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(self.port), token, *(["sse"] if sse else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._up, timeout=30, what="the MCP server to listen")

    def _up(self) -> bool:
        try:
            return httpx.post(self.url, timeout=1).status_code == 401  # no token: it answers, refusing
        except httpx.HTTPError:
            return False

    def _opens_file(self) -> Path:
        return Path(tempfile.gettempdir()) / f"hangar-mcp-{self.port}.opens"

    def opens(self) -> int:
        """Sessions clients opened on it (tests/engine/mcp_server.py counts them), and on the server it
        restarts (one started with the same `port`)."""
        path = self._opens_file()
        return len(path.read_text().splitlines()) if path.exists() else 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def mcp_server():
    server = McpServer()
    yield server
    server.stop()


def configure(persona, server: McpServer, **extra) -> None:
    """The org allows loopback MCP URLs, the project holds the token as a secret scoped to the server `tools`
    and names that server."""
    org_mcp_policy_set(actor=persona.actor, org=persona.org, policy={"remote": ["http://127.0.0.1:*"]})
    env_var_set(
        actor=persona.actor,
        project=persona.project,
        name="TOOLS_TOKEN",
        value=TOKEN,
        secret=True,
        scope={"mcp": ["tools"]},
    )
    config = {"type": "remote", "url": server.url, "headers": {"Authorization": "Bearer {env:TOOLS_TOKEN}"}}
    project_update(actor=persona.actor, project=persona.project, mcp={"tools": {**config, **extra}})


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "id": call_id, "arguments": arguments}]}


def offered(script, script_id: str, index: int = 0) -> dict[str, dict]:
    request = script.requests(script_id)[index]
    return {t["function"]["name"]: t["function"] for t in request.get("tools") or []}


def test_the_model_calls_a_remote_servers_tools_with_the_projects_secret_header(
    alice, script, make_session, worker, mcp_server
):
    configure(alice, mcp_server)
    script_id = script.load(
        [
            [call("c1", "tools_add", a=2, b=40)],
            [call("c2", "tools_huge")],
            [call("c3", "tools_fail")],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("use the tools"))
    session = wait_idle(session)

    tools = offered(script, script_id)
    assert tools["tools_add"]["parameters"]["properties"].keys() == {"a", "b"}
    assert tools["tools_add"]["description"] == "Add two integers."
    assert "bash" in tools  # beside the built-in tools
    add, huge, fail = tool_parts(session)
    assert add["tool"] == "tools_add" and add["state"]["status"] == "completed", add
    assert add["state"]["output"] == "sum is 42"
    measured = add["state"]["metadata"]["mcp"]
    assert measured == {"server": "tools", "tool": "add", "bytes": 9, "ms": measured["ms"]}
    assert isinstance(measured["ms"], int) and measured["ms"] >= 0
    assert huge["state"]["status"] == "completed" and huge["state"]["metadata"]["truncated"] is True
    assert len(huge["state"]["output"].encode()) < 60 * 1024  # bounded like a built-in tool's output
    assert fail["state"]["status"] == "error" and "fail" in fail["state"]["error"]
    assert assistant_messages(session)[-1]["finish"] == "stop"

    audits = list(AuditEvent.objects.filter(action="mcp.call").order_by("id"))
    assert [(a.data["server"], a.data["tool"], a.data["ok"]) for a in audits] == [
        ("tools", "add", True),
        ("tools", "huge", True),
        ("tools", "fail", False),
    ]
    assert audits[0].data["user"] == alice.user.pk and audits[0].data["ms"] == measured["ms"]
    assert all("arguments" not in a.data and "40" not in str(a.data.get("a")) for a in audits)
    assert status.known(alice.project) == {"tools": {"status": "connected"}}

    # The secret went to the server only: not to an event, a part, the audit log, the worker's log or the
    # sandbox (its environment, its files).
    assert not Event.objects.filter(session_id=session.pk, payload__icontains=TOKEN).exists()
    assert not Part.objects.filter(session_id=session.pk, data__icontains=TOKEN).exists()
    assert not AuditEvent.objects.filter(data__icontains=TOKEN).exists()
    assert TOKEN not in Path(worker.log.name).read_text()
    # By its name: a listing inspects every container, and one another test removes meanwhile is a 404.
    container = from_env().containers.get(containers.session_container_name(session.pk))
    assert not any(TOKEN in value for value in container.attrs["Config"]["Env"])
    found = container.exec_run(["sh", "-c", f"grep -rl {TOKEN} /workspace /tmp /home /root /etc 2>/dev/null"])
    assert found.output.strip() == b"", found.output


def test_an_org_deny_stops_a_servers_tools(alice, script, make_session, worker, mcp_server):
    configure(alice, mcp_server)
    org_permission_policy_set(
        actor=alice.actor, org=alice.org, rules=[{"permission": "tools_*", "pattern": "*", "action": "deny"}]
    )
    Project.objects.filter(pk=alice.project.pk).update(
        permission_rules=[{"permission": "tools_add", "pattern": "*", "action": "allow"}]
    )
    script_id = script.load([[call("c1", "tools_add", a=1, b=1)], [{"text": "could not"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("add"))
    session = wait_idle(session)

    assert not any(name.startswith("tools_") for name in offered(script, script_id))
    (part,) = tool_parts(session)
    assert part["state"]["status"] != "completed" or "sum is" not in part["state"].get("output", "")
    assert not AuditEvent.objects.filter(action="mcp.call").exists()


def test_an_ask_parks_the_run_and_a_reply_runs_the_call(alice, script, make_session, worker, mcp_server):
    configure(alice, mcp_server)
    Project.objects.filter(pk=alice.project.pk).update(
        permission_rules=[{"permission": "tools_add", "pattern": "*", "action": "ask"}]
    )
    script_id = script.load([[call("c1", "tools_add", a=20, b=22)], [{"text": "added"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("add"))
    request = wait_for(
        lambda: PermissionRequest.objects.filter(session=session, status="pending").first(),
        what="a pending permission request",
    )
    assert request.permission == "tools_add" and request.patterns == ["*"]
    assert not AuditEvent.objects.filter(action="mcp.call").exists()
    permission_reply(actor=alice.actor, request=request, reply="once")
    session = wait_idle(session)
    (part,) = tool_parts(session)
    assert part["state"]["status"] == "completed" and part["state"]["output"] == "sum is 42"


def test_a_slow_call_and_a_crashing_server_fail_the_call_not_the_run(
    alice, script, make_session, worker, mcp_server
):
    configure(alice, mcp_server, timeout=1500)
    script_id = script.load(
        [
            [call("c1", "tools_slow", seconds=5)],
            [call("c2", "tools_crash")],
            [call("c3", "tools_add", a=1, b=2)],
            [{"text": "the server is gone"}],
        ]
    )
    session = make_session(alice, script_id)
    began = time.monotonic()
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("go"))
    session = wait_idle(session)

    slow, crash, after = tool_parts(session)
    assert slow["state"]["status"] == "error" and "timed out" in slow["state"]["error"], slow["state"]
    assert slow["state"]["time"]["end"] - slow["state"]["time"]["start"] < 4500
    assert crash["state"]["status"] == "error", crash["state"]
    assert after["state"]["status"] == "error" and "MCP server tools" in after["state"]["error"]
    assert assistant_messages(session)[-1]["finish"] == "stop"
    assert time.monotonic() - began < 120


def test_a_secret_scoped_to_another_server_never_reaches_this_one(alice, script, make_session, mcp_server):
    configure(alice, mcp_server)
    env_var_set(
        actor=alice.actor,
        project=alice.project,
        name="TOOLS_TOKEN",
        value=TOKEN,
        secret=True,
        scope={"mcp": ["another"]},
    )
    session = make_session(alice, script.load([[{"text": "unused"}]]))
    assert McpCatalog().tools(session_for_run(session.pk), set()) == {}
    known = status.known(alice.project)["tools"]
    assert known["status"] == "failed" and TOKEN not in known["error"]


def test_a_workspaces_opencode_json_adds_servers_the_org_allows_without_project_secrets(
    alice, script, make_session, worker, mcp_server
):
    configure(alice, mcp_server)
    env_var_set(
        actor=alice.actor,
        project=alice.project,
        name="TOOLS_TOKEN",
        value=TOKEN,
        secret=True,
        scope={"mcp": ["tools", "ws"]},
    )
    headers = {"Authorization": "Bearer {env:TOOLS_TOKEN}"}
    workspace = {
        "mcp": {
            "open": {"type": "remote", "url": mcp_server.url.replace("/mcp", "/mcp/"), "headers": headers},
            "ws": {"type": "remote", "url": mcp_server.url, "headers": headers},
            "elsewhere": {"type": "remote", "url": "https://tools.example.net/mcp"},
            "shell": {"type": "local", "command": ["sh", "-c", "true"]},
        }
    }
    script_id = script.load([[{"text": "looked"}]])
    session = make_session(alice, script_id)
    sandbox_for(session).write("/workspace/opencode.json", json.dumps(workspace))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("look"))
    wait_idle(session)

    names = offered(script, script_id)
    assert "tools_add" in names  # the project's server, with its secret
    assert not any(n.startswith(("ws_", "open_", "elsewhere_", "shell_")) for n in names), sorted(names)
    known = status.known(alice.project)
    # A workspace server the org allows is tried, but gets no project secret: the server refuses it.
    assert known["ws"]["status"] == "failed" and known["open"]["status"] == "failed"
    assert known["elsewhere"] == {"status": "failed", "error": "This URL is not in the org's MCP allow-list."}
    assert known["shell"]["error"] == "This local command is not in the org's MCP allow-list."


STDIO_SERVER = Path(__file__).with_name("stdio_mcp_server.py")


def test_a_local_server_runs_in_the_sandbox_with_its_scoped_secret_and_restarts_after_a_crash(
    alice, script, make_session, worker
):
    command = ["python3", "/workspace/.mcp/server.py"]
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"local": ["python3 /workspace/.mcp/*"]})
    env_var_set(
        actor=alice.actor,
        project=alice.project,
        name="SCOPED_SECRET",
        value="local-secret-value",
        secret=True,
        scope={"mcp": ["stdio"]},
    )
    project_update(
        actor=alice.actor,
        project=alice.project,
        mcp={"stdio": {"type": "local", "command": command, "environment": {"MODE": "test"}}},
    )
    script_id = script.load(
        [
            [call("c1", "stdio_whoami")],
            [call("c2", "stdio_crash")],
            [call("c3", "stdio_whoami")],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    sandbox_for(session).write("/workspace/.mcp/server.py", STDIO_SERVER.read_text())
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("who runs it"))
    session = wait_idle(session)

    assert offered(script, script_id)["stdio_whoami"]["description"] == "Who runs this server."
    first, crash, again = tool_parts(session)
    assert first["state"]["status"] == "completed", first["state"]
    assert "uid=1000" in first["state"]["output"] and "secret=True" in first["state"]["output"]
    assert crash["state"]["status"] == "error" and "exited" in crash["state"]["error"], crash["state"]
    assert again["state"]["status"] == "completed", again["state"]
    pid = first["state"]["output"].split()[0]
    assert again["state"]["output"].split()[0] != pid  # a new process: restarted after the crash
    assert status.known(alice.project) == {"stdio": {"status": "connected"}}
    assert [a.data["tool"] for a in AuditEvent.objects.filter(action="mcp.call").order_by("id")] == [
        "whoami",
        "crash",
        "whoami",
    ]


def test_a_server_speaking_only_sse_is_reached_over_sse(alice, script, make_session):
    server = McpServer(transport="sse")
    try:
        configure(alice, server)
        session = make_session(alice, script.load([[{"text": "unused"}]]))
        tools = McpCatalog().tools(session_for_run(session.pk), set())
        assert {"tools_add", "tools_huge", "tools_slow"} <= tools.keys()
        result = tools["tools_add"].server.call_tool("add", {"a": 1, "b": 2}, threading.Event())
        assert result["content"] == [{"type": "text", "text": "sum is 3"}]
    finally:
        server.stop()
