"""Two sandbox hosts on this machine for an engine test, in the roles of docs/scale-out.md: a host service
for A (this machine's Docker engine) and one for B (tests/sandbox/hostb.py), each a worker consuming only its
host queue, and an engine worker that holds no Docker socket (HANGAR_SANDBOX_REMOTE=1)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from hangar.conversations.host_selectors import host_named
from hangar.engine.workspace.host_names import host_queue
from sandbox import channel
from tests.engine.conftest import wait_for

NO_DOCKER = "unix:///nonexistent/docker.sock"


@dataclass
class TwoHosts:
    a: str  # host A's name
    b: str
    b_service: Any  # B's host service (tests.engine.conftest.Worker), for a test that kills it
    engine: Any  # the engine worker, whose log a test reads


def start_two_hosts(
    host_b,
    start_worker,
    monkeypatch,
    tmp_path,
    tag: str,
    *,
    shared: dict | None = None,
    services: dict | None = None,
) -> TwoHosts:
    """Start A's and B's host services (with `services` besides) and the engine worker (all three with
    `shared`), wait until both hosts registered, and talk TCP to agents from this process too."""
    suffix = uuid.uuid4().hex[:6]
    a, b = f"{tag}-a-{suffix}", f"{tag}-b-{suffix}"
    shared = {channel.SETTING: "tcp", "HANGAR_SANDBOX_POOL": "0"} | (shared or {})
    services = {"HANGAR_HOST_HEARTBEAT_S": "1"} | (services or {})
    start_worker(env=shared | services | {"HANGAR_SANDBOX_HOST": a}, queues=[host_queue(a)])
    b_env = host_b.service_env() | {"HANGAR_SANDBOX_HOST": b}
    b_service = start_worker(env=shared | services | b_env, queues=[host_queue(b)])
    engine = {
        "HANGAR_SANDBOX_REMOTE": "1",
        "DOCKER_HOST": NO_DOCKER,
        "HANGAR_SANDBOX_ROOT": str(tmp_path / "engine-root"),
        "HANGAR_SANDBOX_HOST": f"engine-{suffix}",
    }
    engine_worker = start_worker(env=shared | engine)
    wait_for(lambda: host_named(a) and host_named(b), 120, what="both hosts registered")
    monkeypatch.setenv(channel.SETTING, "tcp")
    return TwoHosts(a, b, b_service, engine_worker)
