"""The agent channel over TCP (HANGAR_AGENT_TRANSPORT=tcp): real Docker, the real sandbox image.

The channel carries the whole Sandbox protocol; only a connection that proves the session's secret is
served; the sandbox's own processes cannot read that secret nor reach another sandbox's agent (or the
host); a worker without any Docker socket drives a session from the registry's files alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sandbox import channel, registry, volumes
from sandbox.channel_client import TcpAgentConnection, connect_session
from sandbox.pool import WarmPool
from sandbox.protocol import SandboxSpec, SandboxUnavailable
from tests.sandbox.conftest import TEST_LABEL

REPO = Path(__file__).resolve().parents[2]
HANDSHAKE_TIMEOUT_S = 5.0  # agent/channel.py


pytestmark = pytest.mark.usefixtures(
    "tcp_transport"
)  # the agent channel over TCP (tests/sandbox/conftest.py)


def _spec(session_id: str, **kw) -> SandboxSpec:
    return SandboxSpec(session_id=session_id, memory_mb=256, pids=128, disk_mb=64, **kw)


@pytest.fixture
def tcp_box(sandboxes, new_session_id):
    return sandboxes.get_or_create(_spec(new_session_id()))


def _endpoint(box) -> tuple[str, int, bytes]:
    address, port, volume_id = registry.channel_endpoint(volumes.session_key(box.session_id))
    return address, port, channel.read_secret(volume_id)


def _hello(sock: socket.socket) -> str:
    line = b""
    while not line.endswith(b"\n"):
        chunk = sock.recv(1)
        assert chunk, "the agent closed before its hello"
        line += chunk
    return json.loads(line)["nonce"]


def _closed(sock: socket.socket, within: float) -> bool:
    """The agent closes the connection (EOF or reset) within `within` seconds, sending nothing more."""
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _gateway(sandboxes) -> str:
    """The host's address on the channel bridge."""
    return sandboxes.api.inspect_network(channel.network_name())["IPAM"]["Config"][0]["Gateway"]


@contextlib.contextmanager
def _host_listener():
    """A host service listening on every interface (as Postgres or Redis might); yields its port."""
    listener = socket.create_server(("0.0.0.0", 0))
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def _connect_probe(box, targets: list[tuple[str, int]]) -> str:
    """From inside the sandbox (uid 1000): try a TCP connection to each target; one line each."""
    script = textwrap.dedent(f"""\
        import socket
        for target in {targets!r}:
            try:
                socket.create_connection(tuple(target), timeout=3).close()
                print("OPEN", target)
            except OSError as exc:
                print("closed", target, type(exc).__name__)
        """)
    box.write("/tmp/probe.py", script)
    return box.exec("python3 /tmp/probe.py", timeout_s=30).output


def test_the_sandbox_protocol_works_over_tcp(tcp_box):
    assert tcp_box.connection.mode == "tcp"
    chunks: list[str] = []
    result = tcp_box.exec(
        "for i in 1 2 3; do echo line$i; sleep 0.2; done", on_output=chunks.append, timeout_s=30
    )
    assert result.exit_code == 0
    assert result.output.split() == ["line1", "line2", "line3"]
    assert len(chunks) >= 2, "output streamed as it came, not once at the end"
    assert "".join(chunks).split() == ["line1", "line2", "line3"]

    before = tcp_box.snapshot_track()
    tcp_box.write("/workspace/notes.txt", "hello\nover tcp\n")
    assert tcp_box.read("/workspace/notes.txt").content.splitlines()[-1].endswith("over tcp")
    assert tcp_box.read_bytes("/workspace/notes.txt") == b"hello\nover tcp\n"
    after = tcp_box.snapshot_track()
    [diff] = tcp_box.snapshot_diff(before, after)
    assert (diff.path, diff.status, diff.additions) == ("notes.txt", "added", 2)

    # Many threads share the one connection; each gets its own reply.
    errors: list[str] = []

    def reader(n: int) -> None:
        tcp_box.write(f"/workspace/t{n}.txt", f"thread {n}")
        if tcp_box.read(f"/workspace/t{n}.txt").content.split("\t")[-1] != f"thread {n}":
            errors.append(f"thread {n} read another's reply")

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_dropped_connection_is_reopened(tcp_box):
    first = tcp_box.connection
    first.sock.shutdown(socket.SHUT_RDWR)  # the network drops it: the reader sees the end
    deadline = time.monotonic() + 5
    while not first.dead and time.monotonic() < deadline:
        time.sleep(0.01)
    assert first.dead
    assert tcp_box.exec("echo back").output.strip() == "back"
    assert tcp_box.connection is not first and tcp_box.connection.mode == "tcp"


def test_only_the_secret_opens_the_channel(tcp_box):
    address, port, secret = _endpoint(tcp_box)
    served = TcpAgentConnection.connect(address, port, secret)  # held open through every attack below
    try:
        # A wrong secret.
        with socket.create_connection((address, port)) as sock:
            nonce = _hello(sock)
            wrong = hmac.new(b"\x00" * 32, nonce.encode(), hashlib.sha256).hexdigest()
            sock.sendall(json.dumps({"hmac": wrong}).encode() + b"\n")
            assert _closed(sock, 3)
        # A replay: the right answer to another connection's nonce.
        with (
            socket.create_connection((address, port)) as first,
            socket.create_connection((address, port)) as second,
        ):
            old = hmac.new(secret, _hello(first).encode(), hashlib.sha256).hexdigest()
            _hello(second)
            second.sendall(json.dumps({"hmac": old}).encode() + b"\n")
            assert _closed(second, 3)
        # No handshake, a request instead: it is never read, never run.
        with socket.create_connection((address, port)) as sock:
            _hello(sock)
            sock.sendall(b'{"id":"x:1","op":"exec","command":"touch /workspace/pwned"}\n')
            assert _closed(sock, 3)
        # Silence: closed once the handshake's time is up, not before.
        with socket.create_connection((address, port)) as sock:
            _hello(sock)
            started = time.monotonic()
            assert not _closed(sock, 1)
            assert _closed(sock, HANDSHAKE_TIMEOUT_S + 2)
            assert time.monotonic() - started < HANDSHAKE_TIMEOUT_S + 2
        # An over-long handshake line.
        with socket.create_connection((address, port)) as sock:
            _hello(sock)
            sock.sendall(b"{" + b"a" * 4096)
            assert _closed(sock, 3)
        # An over-long request line, even from an authenticated client: that connection ends.
        victim = TcpAgentConnection.connect(address, port, secret)
        victim.sock.sendall(b'{"id":"' + b"a" * (33 << 20))
        deadline = time.monotonic() + 30
        while not victim.dead and time.monotonic() < deadline:
            time.sleep(0.05)
        assert victim.dead
        # The agent kept serving the others.
        assert served.call("exec", {"command": "ls /workspace"})["output"].split() == []
        assert tcp_box.stat("/workspace/pwned") is None
    finally:
        served.close()


def test_the_sandbox_cannot_read_its_secret(tcp_box):
    _address, _port, secret = _endpoint(tcp_box)
    agent_pid = tcp_box.ping()["pid"]
    probe = tcp_box.exec(
        f"""id -u
        for f in /etc/hangar/agent.key /proc/1/environ /proc/{agent_pid}/environ /proc/{agent_pid}/mem; do
          if head -c 100000 "$f" >/dev/null 2>&1; then echo "READABLE $f"; else echo "denied $f"; fi
        done
        cat /proc/*/environ /proc/*/cmdline /etc/hangar/agent.key 2>/dev/null | tr '\\0' '\\n'
        env""",
        timeout_s=30,
    )
    lines = probe.output.splitlines()
    assert lines[0] == "1000"
    assert "denied /etc/hangar/agent.key" in lines
    assert "denied /proc/1/environ" in lines
    assert f"denied /proc/{agent_pid}/environ" in lines
    assert not [line for line in lines if line.startswith("READABLE")]
    assert secret.hex() not in probe.output
    # The secret never went into the container's configuration (a `docker exec` inherits its env).
    assert secret.hex() not in json.dumps(tcp_box.manager.api.inspect_container(tcp_box.container_name))


def test_no_sandbox_reaches_another_agent_or_the_host(sandboxes, new_session_id, tcp_box):
    address, port, _secret = _endpoint(tcp_box)
    neighbour = sandboxes.get_or_create(_spec(new_session_id()))
    with _host_listener() as host_port:
        probe = _connect_probe(
            neighbour, [(address, port), (_gateway(sandboxes), host_port), ("1.1.1.1", 53)]
        )
    assert probe.count("closed") == 3, probe
    # ...while the host reaches both agents.
    assert tcp_box.exec("echo ok").output.strip() == "ok"
    assert neighbour.exec("echo ok").output.strip() == "ok"


def test_the_default_transport_opens_no_port(sandboxes, new_session_id, monkeypatch):
    monkeypatch.setenv(channel.SETTING, "attach")
    box = sandboxes.get_or_create(_spec(new_session_id()))
    info = sandboxes.api.inspect_container(box.container_name)
    assert box.connection.mode == "attach"
    assert info["HostConfig"]["NetworkMode"] == "none"
    assert not [m for m in info["Mounts"] if m["Destination"] == channel.SECRET_MOUNT]
    listening = box.exec("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2, $4}'").output
    assert ":1B9E 0A" not in listening.upper()  # 7070 in LISTEN state


def test_a_worker_without_docker_drives_a_session(tcp_box):
    tcp_box.write("/workspace/from_host.txt", "written by the host\n")
    base = tcp_box.snapshot_track()
    script = textwrap.dedent(f"""\
        import json, docker
        from sandbox.channel_client import connect_session
        try:
            docker.from_env().ping()
            reached_docker = True
        except Exception:
            reached_docker = False
        box = connect_session({tcp_box.session_id!r})
        streamed = []
        result = box.exec("echo one; sleep 0.2; echo two", on_output=streamed.append)
        box.write("/workspace/from_worker.txt", "written by a worker without docker\\n")
        read = box.read("/workspace/from_host.txt").content
        diff = [(d.path, d.status) for d in box.snapshot_diff({base!r}, box.snapshot_track())]
        print(json.dumps({{"docker": reached_docker, "mode": box.connection.mode, "output": result.output,
                          "streamed": streamed, "read": read, "diff": diff}}))
    """)
    env = os.environ | {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["docker"] is False
    assert seen["mode"] == "tcp"
    assert seen["output"].split() == ["one", "two"]
    assert "".join(seen["streamed"]).split() == ["one", "two"]
    assert "written by the host" in seen["read"]
    assert seen["diff"] == [["from_worker.txt", "added"]]
    assert tcp_box.read_bytes("/workspace/from_worker.txt") == b"written by a worker without docker\n"


def test_an_allowlist_sandbox_has_the_channel_and_still_no_way_out(sandboxes, new_session_id, tcp_box):
    address, port, _secret = _endpoint(tcp_box)
    box = sandboxes.get_or_create(_spec(new_session_id(), network="allowlist", allowlist=["example.test:80"]))
    assert box.connection.mode == "tcp"
    networks = sandboxes.api.inspect_container(box.container_name)["NetworkSettings"]["Networks"]
    assert channel.network_name() in networks and len(networks) == 2
    with _host_listener() as host_port:
        probe = _connect_probe(box, [(address, port), (_gateway(sandboxes), host_port), ("1.1.1.1", 53)])
    # The channel bridge is the default route's gateway, but Docker forwards nothing off an internal
    # network and the host drops what the sandbox opens to it: every target times out.
    assert probe.count("closed") == 3, probe


def test_a_resumed_sandbox_is_reached_at_its_new_address(sandboxes, tcp_box):
    tcp_box.write("/workspace/kept.txt", "kept\n")
    sandboxes.hibernate(tcp_box.session_id)
    with pytest.raises(SandboxUnavailable):
        connect_session(tcp_box.session_id)  # stopped: a worker without Docker cannot bring it back
    resumed = sandboxes.get_or_create(_spec(tcp_box.session_id))
    assert resumed.connection.mode == "tcp"
    info = sandboxes.api.inspect_container(resumed.container_name)
    assert registry.channel_endpoint(volumes.session_key(tcp_box.session_id))[:2] == channel.endpoint_of(info)
    again = connect_session(tcp_box.session_id)  # from the registry, as a worker without Docker would
    assert again.read_bytes("/workspace/kept.txt") == b"kept\n"
    again.close()


def test_a_sandbox_made_before_the_channel_was_on_is_still_attached(sandboxes, new_session_id, monkeypatch):
    monkeypatch.setenv(channel.SETTING, "attach")
    sid = new_session_id()
    sandboxes.get_or_create(_spec(sid)).write("/workspace/old.txt", "old\n")
    sandboxes._forget(sid)
    monkeypatch.setenv(channel.SETTING, "tcp")
    again = sandboxes.get_or_create(_spec(sid))
    assert again.connection.mode == "attach"
    assert again.read_bytes("/workspace/old.txt") == b"old\n"
    assert registry.channel_endpoint(volumes.session_key(sid)) is None
    with pytest.raises(SandboxUnavailable):
        connect_session(sid)  # no channel: only a process with Docker reaches it


def test_a_tcp_host_never_claims_a_pooled_container_without_the_channel(
    docker_client, image, sandboxes, new_session_id, monkeypatch
):
    labels = TEST_LABEL | {"hangar.test.pool": new_session_id()}  # this test's pools see only their own

    def pool() -> WarmPool:
        return WarmPool(1, template=_spec("pool"), client=docker_client, image=image, extra_labels=labels)

    monkeypatch.setenv(channel.SETTING, "attach")
    before = pool()
    before.fill()  # left by a process of the attach days
    assert len(before.available()) == 1
    monkeypatch.setenv(channel.SETTING, "tcp")
    after = pool()  # a process started since
    try:
        assert after.available() == []
        assert after.claim(sandboxes, _spec(new_session_id())) is None
        assert after.retire_stale() == 1
        after.fill()
        box = after.claim(sandboxes, _spec(new_session_id()))
        assert box is not None and box.connection.mode == "tcp"
        assert box.exec("echo claimed").output.strip() == "claimed"
    finally:
        after.drain()
