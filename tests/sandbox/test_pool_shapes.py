"""Every project warm: a claim whose limits differ from the pool's template is sized at claim time (memory,
CPUs and pids with `docker update`), and the pool keeps containers of the workspace quotas and images that
sessions asked for lately (demand shared by every pool of the host with the same labels); a shape nobody
asked for lately is retired. Real Docker, real loop volumes."""

from __future__ import annotations

import os
import time
import uuid

import docker
import pytest

from sandbox import pool as pool_module
from sandbox import registry, volumes
from sandbox.manager import DockerSandboxes
from sandbox.pool import WarmPool
from sandbox.protocol import SandboxSpec
from tests.sandbox.conftest import RUN_ID, TEST_LABEL

TEMPLATE = dict(memory_mb=256, pids=128, disk_mb=64)


@pytest.fixture
def make_pool(docker_client, image):
    """Pools of one test share their demand; other tests' pools never see it (a label of their own)."""
    labels = TEST_LABEL | {"hangar.test_pool": uuid.uuid4().hex[:8]}
    made = []

    def make(size: int) -> tuple[WarmPool, DockerSandboxes]:
        pool = WarmPool(
            size,
            template=SandboxSpec(session_id="pool", **TEMPLATE),
            client=docker_client,
            image=image,
            extra_labels=labels,
        )
        made.append(pool)
        return pool, DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL, pool=pool)

    yield make
    for pool in made:
        pool.drain()


def _pooled(session_id: str) -> bool:
    record = registry.lookup(volumes.session_key(session_id))
    assert record is not None
    return bool(record.get("pooled"))


def test_a_claim_with_other_memory_cpus_and_pids_is_warm_and_gets_its_own_limits(
    make_pool, docker_client, new_session_id
):
    pool, manager = make_pool(1)
    pool.fill()
    [pooled] = pool.available()
    pooled_id = docker_client.api.inspect_container(pooled)["Id"]
    sid = new_session_id()
    box = manager.get_or_create(
        SandboxSpec(session_id=sid, memory_mb=384, cpus=0.5, pids=96, disk_mb=64, env={"TEAM": "a"})
    )
    assert _pooled(sid)
    info = docker_client.api.inspect_container(box.container_name)
    assert info["Id"] == pooled_id
    host = info["HostConfig"]
    assert (host["Memory"], host["MemorySwap"]) == (384 * 2**20, 384 * 2**20)
    assert (host["NanoCpus"], host["PidsLimit"]) == (500_000_000, 96)
    # The kernel holds the container to them, not only Docker's record (cgroup v2, or v1's hierarchies).
    cgroup = "/sys/fs/cgroup"
    read = (
        f"cat {cgroup}/memory.max 2>/dev/null || cat {cgroup}/memory/memory.limit_in_bytes; "
        f"cat {cgroup}/pids.max 2>/dev/null || cat {cgroup}/pids/pids.max"
    )
    assert box.exec(read).output.split() == [
        str(384 * 2**20),
        "96",
    ]
    assert box.exec("echo $TEAM").output == "a\n"
    assert registry.lookup(volumes.session_key(sid))["spec"]["memory_mb"] == 384


def test_a_claim_with_another_disk_quota_is_warm_once_the_pool_has_seen_it_asked(make_pool, new_session_id):
    pool, manager = make_pool(1)
    pool.fill()
    first = new_session_id()
    manager.get_or_create(SandboxSpec(session_id=first, disk_mb=96, memory_mb=256, pids=128))
    assert not _pooled(first)  # never asked before: cold, and the pool now knows the shape
    pool.fill()  # what the miss woke: its refill
    # Another process's pool with the same labels claims it, and keeps the shape: the demand is the
    # host's, not the process's.
    other, other_manager = make_pool(1)
    other.extra_labels = pool.extra_labels
    assert other.fill() == 0
    sid = new_session_id()
    box = other_manager.get_or_create(SandboxSpec(session_id=sid, disk_mb=96, memory_mb=256, pids=128))
    assert _pooled(sid)
    size_mb = int(box.exec("df -m --output=size /workspace | tail -1").output)
    assert 80 <= size_mb <= 96  # the asked quota (less the filesystem's own blocks), not the template's 64
    # The template's shape is still served.
    default = new_session_id()
    manager.get_or_create(SandboxSpec(session_id=default, **TEMPLATE))
    assert _pooled(default)


def test_a_claim_with_another_image_is_warm_once_the_pool_has_seen_it_asked(
    make_pool, docker_client, image, new_session_id
):
    custom = f"hangar-sandbox:custom-{RUN_ID}"
    docker_client.images.get(image).tag(custom)  # a project's own image (same content here)
    pool, manager = make_pool(1)
    made: list[str] = []
    try:
        spec = dict(image=custom, **TEMPLATE)
        first = new_session_id()
        made.append(first)
        manager.get_or_create(SandboxSpec(session_id=first, **spec))
        assert not _pooled(first)
        pool.fill()
        sid = new_session_id()
        made.append(sid)
        box = manager.get_or_create(SandboxSpec(session_id=sid, **spec))
        assert _pooled(sid)
        assert docker_client.api.inspect_container(box.container_name)["Config"]["Image"] == custom
        assert box.exec("echo ok").output == "ok\n"
    finally:
        pool.drain()
        for session_id in made:  # before the image goes: its containers
            manager.destroy(session_id)
        try:
            docker_client.images.remove(custom)
        except docker.errors.APIError:
            pass


def test_pooled_containers_of_a_shape_nobody_asked_for_lately_are_retired(make_pool, new_session_id):
    pool, manager = make_pool(1)
    sid = new_session_id()
    manager.get_or_create(SandboxSpec(session_id=sid, disk_mb=80, memory_mb=256, pids=128))
    pool.fill()
    shaped = [n for n in pool.available(all_shapes=True) if n not in pool.available()]
    assert len(shaped) == 1
    # The demand ages past the window (as if nobody asked for an hour): the next refill retires it.
    past = time.time() - pool_module.DEMAND_WINDOW_S - 60
    for record in pool._demand_dir().glob("*.json"):
        os.utime(record, (past, past))
    pool.fill()
    assert pool.available(all_shapes=True) == pool.available() and len(pool.available()) == 1
