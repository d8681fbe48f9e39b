"""The warm pool's fast claim: its own containers first, with the connection it warmed them with; a
listing (and an attach) only for containers made elsewhere; never one container for two sessions."""

import collections
import functools
import threading

import docker
import pytest

from sandbox import volumes
from sandbox.manager import DockerSandboxes
from sandbox.pool import WarmPool
from sandbox.protocol import SandboxSpec
from tests.sandbox.conftest import TEST_LABEL

LIMITS = dict(memory_mb=256, pids=128, disk_mb=64)
STATE = "/home/hangar/.hangar/snapshot"


def counting_client() -> tuple[docker.DockerClient, collections.Counter]:
    """A client of its own whose Docker API calls of interest are counted."""
    client = docker.from_env()
    calls: collections.Counter = collections.Counter()
    for name in ("containers", "inspect_container", "attach_socket", "exec_create", "rename"):
        method = getattr(client.api, name)

        @functools.wraps(method)
        def counted(*args, _name=name, _method=method, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        setattr(client.api, name, counted)
    return client, calls


@pytest.fixture
def make_pool(image):
    made = []

    def make(size: int, client=None) -> WarmPool:
        pool = WarmPool(
            size,
            template=SandboxSpec(session_id="pool", **LIMITS),
            client=client or docker.from_env(),
            image=image,
            extra_labels=TEST_LABEL,
        )
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.drain()


def test_a_new_session_claims_an_own_container_without_listing_inspecting_or_attaching(
    make_pool, image, new_session_id
):
    client, calls = counting_client()
    pool = make_pool(2, client)
    pool.fill()
    manager = DockerSandboxes(client, image=image, extra_labels=TEST_LABEL, pool=pool)
    calls.clear()
    box = manager.get_or_create(SandboxSpec(session_id=new_session_id(), env={"TEAM": "alpha"}, **LIMITS))
    assert dict(calls) == {"rename": 1}
    assert box.connection.mode == "attach" and box.connection.holds_lock
    assert box.exec("echo $TEAM; ls -A /workspace | wc -l").output.split() == ["alpha", "0"]
    # The snapshot repo is ready and holds nothing of anyone: an empty index, at most git's empty tree.
    assert box.stat(f"{STATE}/HEAD") is not None
    assert box.exec(f"git --git-dir {STATE} ls-files | wc -l").output.strip() == "0"
    objects = box.exec(f"cd {STATE}/objects && find . -type f").output.split()
    assert objects in ([], ["./4b/825dc642cb6eb9a060e54bf8d69288fbee4904"])
    base, _paths = box.snapshot_track_changed(None)
    box.write("a.txt", "a\n")
    assert box.snapshot_track_changed(base)[1] == ["a.txt"]


def test_two_pools_never_hand_the_same_container_to_two_sessions(make_pool, new_session_id):
    own, other = make_pool(1), make_pool(1)
    own.fill()
    assert len(own.available()) == 1
    winners: list = []
    barrier = threading.Barrier(2)

    def claim(pool, sid):
        manager = DockerSandboxes(docker.from_env(), image=pool.image, extra_labels=TEST_LABEL)
        barrier.wait()
        winners.append(pool.claim(manager, SandboxSpec(session_id=sid, **LIMITS)))

    threads = [threading.Thread(target=claim, args=(p, new_session_id())) for p in (own, other)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    boxes = [w for w in winners if w is not None]
    assert len(boxes) == 1
    assert boxes[0].connection.mode == "attach"  # the pool's idle connection never blocks an attach
    assert boxes[0].exec("echo mine").output == "mine\n"
    assert not own._warm


def test_a_container_claimed_elsewhere_is_attached_and_its_pool_lets_go_of_it_at_refill(
    make_pool, image, new_session_id
):
    own = make_pool(1)
    own.fill()
    [pooled] = own.available()
    client, calls = counting_client()
    elsewhere = make_pool(0, client)  # no containers of its own: it lists
    manager = DockerSandboxes(client, image=image, extra_labels=TEST_LABEL)
    box = elsewhere.claim(manager, SandboxSpec(session_id=new_session_id(), **LIMITS))
    assert box is not None and box.connection.mode == "attach"
    assert calls["containers"] == 1 and calls["inspect_container"] == 0  # the listing gave the id
    own.fill()  # refills, and closes its idle connection to the container it no longer has
    assert pooled not in [entry[0] for entry in own._warm.values()] and len(own._warm) == 1
    assert box.exec("echo still mine").output == "still mine\n"


def test_a_container_removed_behind_the_pools_back_is_skipped(make_pool, docker_client, new_session_id):
    pool = make_pool(2)
    pool.fill()
    first, _second = pool.available()
    removed = docker_client.api.inspect_container(first)
    docker_client.api.remove_container(removed["Id"], force=True)
    try:
        manager = DockerSandboxes(docker_client, image=pool.image, extra_labels=TEST_LABEL)
        box = manager._remember(pool.claim(manager, SandboxSpec(session_id=new_session_id(), **LIMITS)))
        assert docker_client.api.inspect_container(box.container_name)["Id"] != removed["Id"]
        assert box.exec("echo ok").output == "ok\n"
    finally:
        volumes.destroy_volume(removed["Config"]["Labels"]["hangar.volume"])
