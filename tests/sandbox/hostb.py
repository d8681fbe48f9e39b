"""Host B for tests: the second Docker engine of deploy/hosts/hostb.sh (its own network namespace, data and
exec root, socket, bridge), and this process acting as B's host service.

This machine's engine is host A. `host_b` (a session fixture) starts B if it is not running (the first
run on a machine loads the sandbox image into it: `docker save | docker load`, about 15 s; later runs find
it in B's kept data root) and leaves it running for the next test process. B's sandbox root is this
process's HANGAR_SANDBOX_ROOT + "-hostb". Host-local state is process-global in the sandbox library (the
sandbox root, the engine's network namespace), so code acting as B's host service runs inside
`host.active()`, which points them at B and back; the engine's side of the channel needs none of it
beyond the registry's files.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import pytest

from sandbox import registry, volumes
from sandbox.image import ensure_image
from sandbox.manager import DockerSandboxes

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "hosts" / "hostb.sh"
PRIVATE_A = "10.212.0.1"  # this namespace's end of the private link
PRIVATE_B = "10.212.0.2"
CHANNEL_SUBNET = "10.213.x.0/24"  # routed here via PRIVATE_B (hostb.sh); x from the sandbox root's tag


@dataclass
class HostB:
    client: docker.DockerClient
    docker_host: str
    root: Path
    env: dict[str, str]

    def service_env(self) -> dict[str, str]:
        """The environment of a process that is B's host service (a worker consuming B's queue)."""
        return self.env | {"DOCKER_HOST": self.docker_host, "HANGAR_SANDBOX_ROOT": str(self.root)}

    @contextlib.contextmanager
    def active(self) -> Iterator[HostB]:
        """Act as B's host service: B's sandbox root, B's network namespace and channel settings."""
        before = (volumes.ROOT, {k: os.environ.get(k) for k in self.env})
        volumes.ROOT = self.root
        os.environ.update(self.env)
        try:
            yield self
        finally:
            volumes.ROOT = before[0]
            for k, v in before[1].items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def sandboxes(self, labels: dict[str, str]) -> DockerSandboxes:
        return DockerSandboxes(self.client, image=ensure_image(), extra_labels=labels)

    def destroy(self, session_id: str) -> None:
        """Destroy a session's sandbox and workspace on B, if it has any (a test's clean-up)."""
        with self.active():
            DockerSandboxes(self.client, image="unused-for-destroy").destroy(session_id)

    def remove_labelled(self, label: str, key_prefix: str) -> None:
        """Remove B's containers labelled `label` (key=value) and the sessions whose keys start with
        `key_prefix` (volumes and records: a hibernated one has no container)."""
        with self.active():
            for key in registry.registered_keys():
                if key.startswith(key_prefix):
                    if (record := registry.lookup(key)) and record.get("volume"):
                        volumes.destroy_volume(record["volume"])
                    registry.unregister(key)
            for c in self.client.api.containers(all=True, filters={"label": label}):
                with contextlib.suppress(docker.errors.NotFound):
                    self.client.api.remove_container(c["Id"], force=True)
                if volume_id := c["Labels"].get("hangar.volume"):
                    volumes.destroy_volume(volume_id)
                if key := c["Labels"].get("hangar.session_key"):
                    registry.unregister(key)


def start() -> HostB:
    """Host B up (idempotent), and how to reach it."""
    proc = subprocess.run([str(SCRIPT), "up"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"hostb.sh up failed:\n{proc.stdout}\n{proc.stderr}"
    lines = subprocess.run([str(SCRIPT), "env"], capture_output=True, text=True, check=True).stdout.split()
    env = dict(line.split("=", 1) for line in lines)
    docker_host = env.pop("DOCKER_HOST")
    env |= {"HANGAR_AGENT_SUBNET": CHANNEL_SUBNET, "HANGAR_AGENT_TRANSPORT": "tcp"}
    root = Path(f"{str(volumes.ROOT).rstrip('/')}-hostb")
    return HostB(docker.DockerClient(base_url=docker_host), docker_host, root, env)


@pytest.fixture(scope="session")
def host_b() -> Iterator[HostB]:
    from tests.sandbox.conftest import RUN_ID

    host = start()
    yield host
    host.remove_labelled(f"hangar.test={RUN_ID}", f"t{RUN_ID}")
