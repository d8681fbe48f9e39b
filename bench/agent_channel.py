"""Agent channel benchmark: a trivial tool call's round trip over `docker attach` against TCP, one run.

Run from the repo root: .venv/bin/python bench/agent_channel.py [--samples 500]
One sandbox is made with HANGAR_AGENT_TRANSPORT=tcp (so its agent serves both); the same calls go over
an attach connection and over an authenticated TCP connection, interleaved in blocks of 50 so that
both see the same machine load. Issue 29's bar: TCP within 2x of attach. The LAST line is one JSON
object with the figures. Everything it creates is labelled hangar.bench=1 and removed at the end.
"""

from __future__ import annotations

import os
import time
import uuid

import docker
from common import arguments, emit, log, percentile

from sandbox import channel, registry, volumes
from sandbox.channel_client import TcpAgentConnection
from sandbox.connection import AgentConnection
from sandbox.image import ensure_image
from sandbox.manager import DockerSandboxes
from sandbox.protocol import SandboxSpec

LABELS = {"hangar.bench": "1"}
BLOCK = 50

CALLS = {
    # What the read/write/edit tools ask first, answered on the agent's reader thread.
    "stat": ("stat", {"path": "/workspace"}),
    # A request handed to the agent's pool: the shape of most tool calls.
    "read": ("read", {"path": "/workspace/bench.txt", "offset": 0, "limit": 20}),
    # A command: a fork and exec in the sandbox on top of the round trip.
    "exec_true": ("exec", {"command": "true", "timeout": 30}),
}


def measure(conn: AgentConnection, op: str, args: dict, n: int) -> list[float]:
    walls = []
    for _ in range(n):
        t = time.perf_counter()
        conn.call(op, args, timeout=30)
        walls.append((time.perf_counter() - t) * 1000)
    return walls


def main() -> None:
    n = arguments(
        __doc__,
        ("--samples", {"type": int, "default": 500}),
    ).samples
    os.environ[channel.SETTING] = "tcp"
    client = docker.from_env()
    manager = DockerSandboxes(client, image=ensure_image(client), extra_labels=LABELS)
    sid = f"bench-{uuid.uuid4().hex[:10]}"
    result: dict[str, float] = {}
    try:
        box = manager.get_or_create(SandboxSpec(session_id=sid, memory_mb=512, pids=256, disk_mb=256))
        box.write("/workspace/bench.txt", "line\n" * 100)
        tcp = box.connection
        assert tcp.mode == "tcp"
        container_id = client.api.inspect_container(box.container_name)["Id"]
        attach = AgentConnection.open(client.api, container_id, str(volumes.lock_path(container_id)))
        assert attach.mode == "attach", "another process holds this sandbox's attach lock"
        address, port, volume_id = registry.channel_endpoint(volumes.session_key(sid)) or ("", 0, "")
        t = time.perf_counter()
        TcpAgentConnection.connect(address, port, channel.read_secret(volume_id) or b"").close()
        result["tcp_connect_handshake_ms"] = round((time.perf_counter() - t) * 1000, 3)
        for name, (op, args) in CALLS.items():
            samples: dict[str, list[float]] = {"attach": [], "tcp": []}
            for conn in (attach, tcp):  # warm both
                measure(conn, op, args, 20)
            for block in range(max(1, n // BLOCK)):
                order = [("attach", attach), ("tcp", tcp)][:: 1 if block % 2 == 0 else -1]
                for transport, conn in order:
                    samples[transport] += measure(conn, op, args, BLOCK)
            for transport, walls in samples.items():
                p50, p95 = percentile(walls, 0.5), percentile(walls, 0.95)
                log(f"{name:10s} {transport:7s} n={len(walls):5d}  p50={p50:7.3f} ms  p95={p95:7.3f} ms")
                result[f"{name}_{transport}_p50_ms"] = round(p50, 3)
                result[f"{name}_{transport}_p95_ms"] = round(p95, 3)
            result[f"{name}_tcp_over_attach"] = round(
                result[f"{name}_tcp_p50_ms"] / result[f"{name}_attach_p50_ms"], 2
            )
        attach.close()
    finally:
        manager.destroy(sid)
    emit(result)


if __name__ == "__main__":
    main()
