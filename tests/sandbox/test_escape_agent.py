"""Escape suite, the agent's side: what runs in the sandbox cannot reach the agent's pipes, its relay
socket, or the worker's memory. Each attack is a real process in a real container; the worker's memory is
read from /proc/self (this test process is the worker's side of the connection)."""

from __future__ import annotations

import threading
import time

import pytest

from sandbox import connection, volumes
from sandbox.connection import AgentConnection
from sandbox.protocol import SandboxError, SandboxUnavailable

FLOOD_BYTES = 150_000_000
MAX_FRAME = getattr(connection, "MAX_FRAME", 32 << 20)


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_command_cannot_open_the_agents_or_inits_stdout_through_proc(box):
    out = box.exec(
        "for p in 1 $(pgrep -xf 'python3 -S -u /opt/hangar/agent/main.py'); do"
        "  echo junk > /proc/$p/fd/1 2>/dev/null && echo WROTE $p;"
        "  ls /proc/$p/fd >/dev/null 2>&1 && echo LISTED $p;"
        "done; pgrep -xf 'python3 -S -u /opt/hangar/agent/main.py' >/dev/null && echo seen",
        timeout_s=20,
    ).output
    assert "seen" in out and "WROTE" not in out and "LISTED" not in out, out


def test_a_flood_into_the_agents_stdout_through_proc_leaves_the_worker_flat(box):
    before = _rss()
    out = box.exec(
        f"for p in 1 $(pgrep -xf 'python3 -S -u /opt/hangar/agent/main.py'); do"
        f"  head -c {FLOOD_BYTES} /dev/zero | tr '\\0' a > /proc/$p/fd/1 2>/dev/null && echo WROTE $p;"
        "done; echo finished",
        timeout_s=20,
    ).output
    assert "finished" in out and "WROTE" not in out, out
    assert box.exec("echo ok", timeout_s=10).output == "ok\n"
    assert _rss() - before < 40_000_000


def test_a_command_cannot_replace_the_relay_socket(box):
    # The fake agent answers every relay with an endless line: a worker that reached it would buffer it all.
    fake = r"""
import os, socket, sys, threading
def serve(path):
    try:
        os.unlink(path)
    except OSError:
        pass
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(path)
    except OSError as e:
        print("cannot bind", path, e.strerror, flush=True)
        return
    print("BOUND", path, flush=True)
    s.listen(8)
    while True:
        c, _ = s.accept()
        try:
            while True:
                c.sendall(b"x" * 65536)
        except OSError:
            c.close()
for p in sys.argv[1:]:
    threading.Thread(target=serve, args=(p,), daemon=True).start()
threading.Event().wait(60)
"""
    box.write("fake_agent.py", fake)
    paths = "/home/hangar/.hangar-agent.sock /run/hangar/agent.sock"
    box.exec(f"nohup python3 fake_agent.py {paths} > fake.log 2>&1 &")
    # Until the fake has tried both paths (one line each: bound, or could not bind).
    deadline = time.monotonic() + 30
    while len((log := box.exec("cat fake.log").output).splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    # A second connection from this process finds the attach lock taken: it goes through the relay.
    before = _rss()
    conn = AgentConnection.open(box._manager.api, _container_id(box), str(_lock(box)))
    try:
        assert conn.mode == "relay"
        assert conn.call("ping", timeout=15)["pid"] > 0, log
    finally:
        conn.close()
    assert "BOUND /run/hangar/agent.sock" not in log, log  # the old home path is free now, and harmless
    assert _rss() - before < 40_000_000


def test_reading_a_huge_image_is_refused_in_the_sandbox(box):
    box.exec("truncate -s 300M huge.png && head -c 2000000 /dev/urandom > small.png")
    before = _rss()
    with pytest.raises(SandboxError, match="too large"):
        box.read_bytes("huge.png")
    assert len(box.read_bytes("small.png")) == 2_000_000
    with pytest.raises(SandboxError, match="too large"):
        box.read_bytes("small.png", max_bytes=1_000_000)
    assert box.exec("echo ok").output == "ok\n"
    assert _rss() - before < 40_000_000


def test_an_oversized_frame_drops_the_connection_and_the_next_call_recovers(box, docker_client):
    # Only init's own user (this test, through docker exec) can still write into init's stdout, which is
    # the agent's pipe: a stand-in for an agent bug that emits an endless line.
    conn = box.connection
    api = docker_client.api
    owner = api.exec_start(api.exec_create(box.container_name, ["stat", "-c", "%u", "/proc/1"])["Id"])
    before = _rss()
    flood = api.exec_create(
        box.container_name,
        ["sh", "-c", f"head -c {FLOOD_BYTES} /dev/zero | tr '\\0' a > /proc/1/fd/1"],
        user=owner.decode().strip(),
    )["Id"]
    done = threading.Event()
    threading.Thread(target=lambda: (api.exec_start(flood), done.set()), daemon=True).start()
    assert done.wait(60)
    deadline = time.monotonic() + 30
    while not conn.dead and time.monotonic() < deadline:
        time.sleep(0.05)
    assert conn.dead  # the frame outgrew MAX_FRAME: the connection was dropped, not grown
    assert _rss() - before < MAX_FRAME + 40_000_000
    for _ in range(3):  # the first call after may still meet the flood's tail and drop again
        try:
            assert box.exec("echo ok", timeout_s=10).output == "ok\n"
            break
        except SandboxUnavailable:
            time.sleep(0.5)
    else:
        pytest.fail("the sandbox never answered again")


def _container_id(box) -> str:
    return box._manager.api.inspect_container(box.container_name)["Id"]


def _lock(box):
    return volumes.lock_path(_container_id(box))
