"""A run whose worker reaches the sandbox over the TCP agent channel (HANGAR_AGENT_TRANSPORT=tcp): a real
Celery worker (with its warm pool), the scripted model, tools in the real Docker sandbox.

The worker still holds the Docker socket here (it creates the sandbox: the host queues of
docs/scale-out.md do not exist yet); that a process without one drives a session over the channel is
tests/sandbox/test_agent_channel.py's. What this pins: the engine's every tool call goes over TCP (the
worker holds no attach lock on the container, so it never attached), and the channel's endpoint and
secret in the registry reach the same workspace from another process.
"""

from __future__ import annotations

import fcntl
import os

import pytest

from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import manager
from sandbox import channel, containers, registry, volumes
from sandbox.channel_client import connect_session
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _attach_lock_is_free(container_id: str) -> bool:
    fd = os.open(volumes.lock_path(container_id), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _warm_on_the_channel() -> list[dict]:
    """The worker's warm pool containers made with the channel (on its network)."""
    return manager().api.containers(
        filters={
            "label": ["hangar.pool=1", f"hangar.root={volumes.root_tag()}"],
            "network": channel.network_name(),
            "status": "running",
        }
    )


def _run_and_check(alice, script, make_session, name: str) -> None:
    script_id = script.load(
        [
            [call("write", "c1", filePath=f"/workspace/{name}.py", content=f"print('{name}')\n")],
            [call("bash", "c2", command=f"python3 {name}.py", description="run it")],
            [{"text": "Ran it."}],
        ],
        title="Over the channel",
    )
    session = make_session(alice, script_id)

    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"write and run {name}.py"))
    session = wait_idle(session)

    tools = tool_parts(session)
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("write", "completed"),
        ("bash", "completed"),
    ]
    assert tools[1]["state"]["output"].strip() == name
    assert text_of(session).endswith("Ran it.")

    key = volumes.session_key(session.pk)
    info = manager().api.inspect_container(containers.session_container_name(session.pk))
    # The worker is alive and keeps its connection to the sandbox, yet holds no attach: it talks TCP.
    assert _attach_lock_is_free(info["Id"])
    assert registry.channel_endpoint(key)[:2] == channel.endpoint_of(info)
    box = connect_session(session.pk)  # the registry alone: what a worker without Docker would do
    try:
        assert box.connection.mode == "tcp"
        assert box.read_bytes(f"/workspace/{name}.py") == f"print('{name}')\n".encode()
    finally:
        box.close()


def test_runs_drive_their_sandboxes_over_the_tcp_channel(
    alice, script, make_session, start_worker, monkeypatch
):
    monkeypatch.setenv(channel.SETTING, "tcp")  # this process's manager (the checks) and the worker's
    start_worker(env={channel.SETTING: "tcp"})
    _run_and_check(alice, script, make_session, "first")  # created cold, or claimed if the pool was quick
    # Once the worker's pool is warm, a session claims from it: the pool's attach is let go for TCP too.
    wait_for(_warm_on_the_channel, 90, what="a warm pooled container on the channel network")
    _run_and_check(alice, script, make_session, "claimed")
