"""Fixtures for the sandbox suite: real Docker, no mocks, no database.

Every container and volume the suite creates is labelled hangar.test=<run id>; the session
fixture removes whatever is left, even after a crash mid-test.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import docker
import pytest

from sandbox import channel, containers, registry, volumes
from sandbox.image import ensure_image
from sandbox.manager import DockerSandboxes
from sandbox.protocol import SandboxSpec

# Via the environment so that a second import of this module (tests import it by its dotted
# name, pytest loads it as a conftest) agrees on the run id.
RUN_ID = os.environ.setdefault("HANGAR_SANDBOX_TEST_RUN", uuid.uuid4().hex[:8])
TEST_LABEL = {"hangar.test": RUN_ID}


def pytest_collection_modifyitems(items):
    # Real-engine tests do not need the Django database even when pytest-django is active.
    for item in items:
        if "tests/sandbox" in str(item.fspath):
            item.add_marker(pytest.mark.timeout(120))


@pytest.fixture(scope="session")
def docker_client():
    return docker.from_env()


@pytest.fixture(scope="session")
def image(docker_client):
    return ensure_image(docker_client)


def _remove_leftovers(client: docker.DockerClient) -> None:
    for c in client.api.containers(all=True, filters={"label": f"hangar.test={RUN_ID}"}):
        volume_id = c["Labels"].get("hangar.volume")
        try:
            client.api.remove_container(c["Id"], force=True)
        except docker.errors.NotFound:
            pass
        if volume_id:
            volumes.destroy_volume(volume_id)
    for net in client.api.networks(filters={"label": f"hangar.test={RUN_ID}"}):
        try:
            client.api.remove_network(net["Id"])
        except docker.errors.APIError:
            pass
    for key in registry.registered_keys():
        if key.startswith(f"t{RUN_ID}"):
            record = registry.lookup(key)
            if record:
                volumes.destroy_volume(record["volume"])
            registry.unregister(key)


@pytest.fixture(scope="session")
def sandboxes(docker_client, image):
    manager = DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL)
    yield manager
    _remove_leftovers(docker_client)


@pytest.fixture
def new_session_id():
    made = []

    def make() -> str:
        sid = f"t{RUN_ID}-{uuid.uuid4().hex[:10]}"
        made.append(sid)
        return sid

    yield make
    manager = DockerSandboxes(image="unused-for-destroy")
    for sid in made:
        manager.destroy(sid)


@pytest.fixture
def box(sandboxes, new_session_id):
    """A fresh sandbox for one test (cold path), destroyed afterwards."""
    return sandboxes.get_or_create(
        SandboxSpec(session_id=new_session_id(), memory_mb=256, pids=128, disk_mb=64)
    )


@pytest.fixture(scope="module")
def shared_box(sandboxes):
    """One sandbox reused by read-only-ish tests of a module, to keep the suite fast."""
    sid = f"t{RUN_ID}-shared-{uuid.uuid4().hex[:6]}"
    yield sandboxes.get_or_create(SandboxSpec(session_id=sid, memory_mb=256, pids=128, disk_mb=64))
    sandboxes.destroy(sid)


def host_gateway_ip() -> str:
    out = subprocess.run(
        ["docker", "network", "inspect", "bridge", "-f", "{{(index .IPAM.Config 0).Gateway}}"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "172.17.0.1"


__all__ = ["RUN_ID", "TEST_LABEL", "containers", "host_gateway_ip"]


@pytest.fixture(scope="module")
def tcp_transport():
    """The module's sandboxes reach their agents over the TCP channel (HANGAR_AGENT_TRANSPORT=tcp)."""
    before = os.environ.get(channel.SETTING)
    os.environ[channel.SETTING] = "tcp"
    yield
    if before is None:
        os.environ.pop(channel.SETTING, None)
    else:
        os.environ[channel.SETTING] = before
