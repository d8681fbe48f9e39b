"""The reference MCP servers the sandbox image ships (sandbox/image/tools.py), through the real worker, the
real Docker sandbox and the scripted model: a project names `mcp-server-everything`, `mcp-server-time` or
`mcp-server-git` as a local server the org allows, and a session's call of its tool reaches the tool part.
The sandbox has no network, so each runs from what the image holds."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hangar.accounts.org_policy_services import org_mcp_policy_set
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects.services import project_update
from tests.engine.conftest import text_prompt, tool_parts, wait_idle
from tests.engine.test_mcp_tools import call, offered

pytestmark = pytest.mark.django_db(transaction=True)

REFERENCE_SERVERS = {
    "everything": {"type": "local", "command": ["mcp-server-everything"]},
    "time": {"type": "local", "command": ["mcp-server-time"]},
    "git": {"type": "local", "command": ["mcp-server-git"]},
}


def _configure(persona) -> None:
    org_mcp_policy_set(
        actor=persona.actor,
        org=persona.org,
        policy={"local": ["mcp-server-everything", "mcp-server-time", "mcp-server-git"]},
    )
    project_update(actor=persona.actor, project=persona.project, mcp=REFERENCE_SERVERS)


def test_the_images_reference_servers_answer_a_sessions_calls_offline(alice, script, make_session, worker):
    _configure(alice)
    script_id = script.load(
        [
            [call("c1", "everything_echo", message="hello from hangar")],
            [call("c2", "everything_get-sum", a=20, b=22)],
            [call("c3", "time_get_current_time", timezone="Europe/Paris")],
            [call("c4", "git_git_status", repo_path="/workspace")],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    box = sandbox_for(session)
    box.write("/workspace/tracked.txt", "one\n")
    setup = box.exec(
        "git init -q 2>/dev/null || true; git add tracked.txt && git -c user.name=t -c user.email=t@e "
        "commit -qm one && echo two >> tracked.txt && echo new > untracked.txt",
        cwd="/workspace",
        timeout_s=60,
    )
    assert setup.exit_code == 0, setup.output
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("use the reference servers"))
    session = wait_idle(session, timeout=180)

    tools = offered(script, script_id)
    assert {
        "everything_echo",
        "everything_get-sum",
        "time_get_current_time",
        "git_git_status",
    } <= tools.keys()
    assert tools["time_get_current_time"]["parameters"]["properties"]["timezone"]["type"] == "string"
    echo, total, now, status = tool_parts(session)
    for part in (echo, total, now, status):
        assert part["state"]["status"] == "completed", part["state"]
    assert echo["state"]["output"] == "Echo: hello from hangar"
    assert "42" in total["state"]["output"]
    answer = json.loads(now["state"]["output"])
    assert answer["timezone"] == "Europe/Paris"
    stamp = datetime.fromisoformat(answer["datetime"])
    assert abs((stamp.astimezone(UTC) - datetime.now(UTC)).total_seconds()) < 600
    assert "modified:   tracked.txt" in status["state"]["output"]
    assert "untracked.txt" in status["state"]["output"]
    # The servers ran inside this session's sandbox, as its user, with no network to fetch anything.
    processes = box.exec("ps -eo user:20,args | grep '[m]cp-server'", timeout_s=30).output
    assert (
        "mcp-server-time" in processes
        and "mcp-server-git" in processes
        and "mcp-server-everything" in processes
    )
    assert all(line.split()[0] in ("hangar", "1000") for line in processes.splitlines())
    assert box.exec("ls /sys/class/net", timeout_s=30).output.split() == ["lo"]
