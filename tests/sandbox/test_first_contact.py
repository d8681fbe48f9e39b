"""A process's first contact with a session's sandbox: when the registry's hint shows the container
still running (its init alive in /proc), one attach and no inspect; when the hint is stale (stopped,
replaced, destroyed), the full path still finds, starts or recreates the container."""

import os

from sandbox import registry, volumes
from sandbox.manager import DockerSandboxes
from sandbox.protocol import SandboxSpec
from tests.sandbox.conftest import TEST_LABEL
from tests.sandbox.test_pool_claim import LIMITS, counting_client, make_pool  # noqa: F401 (fixture)


def fresh_process_manager(image) -> tuple[DockerSandboxes, dict]:
    """What another worker process has: its own manager, nothing cached; its Docker calls counted."""
    client, calls = counting_client()
    return DockerSandboxes(client, image=image, extra_labels=TEST_LABEL), calls


def test_a_running_sandbox_is_reached_with_one_attach_and_no_inspect(sandboxes, image, new_session_id):
    spec = SandboxSpec(session_id=new_session_id(), env={"TEAM": "alpha"}, **LIMITS)
    sandboxes.get_or_create(spec).write("here.txt", "hi")  # created cold: the hint is recorded then
    sandboxes._forget(spec.session_id)  # let go of the attach lock, as a worker that moved on
    first, calls = fresh_process_manager(image)
    assert first.get_or_create(spec).read("here.txt").content == "hi"
    assert dict(calls) == {"attach_socket": 1}
    first._forget(spec.session_id)
    os.unlink(registry._hint_path(volumes.session_key(spec.session_id)))  # a sandbox from before hints
    second, calls = fresh_process_manager(image)
    assert second.get_or_create(spec).read("here.txt").content == "hi"
    assert calls["inspect_container"] == 1  # no hint: the full path, which records one
    second._forget(spec.session_id)
    third, calls = fresh_process_manager(image)
    box = third.get_or_create(spec)
    assert dict(calls) == {"attach_socket": 1}
    assert box.exec("echo $TEAM").output.strip() == "alpha"  # the env is bound on this path too


def test_a_claimed_sandbox_is_reached_elsewhere_without_an_inspect(make_pool, image, new_session_id):  # noqa: F811
    pool = make_pool(1)
    pool.fill()
    claimer = DockerSandboxes(pool.client, image=image, extra_labels=TEST_LABEL, pool=pool)
    spec = SandboxSpec(session_id=new_session_id(), **LIMITS)
    claimer.get_or_create(spec).write("claimed.txt", "yes")
    claimer._forget(spec.session_id)
    other, calls = fresh_process_manager(image)
    assert other.get_or_create(spec).read("claimed.txt").content == "yes"
    assert dict(calls) == {"attach_socket": 1}


def test_a_stale_hint_falls_back_to_starting_or_recreating_the_container(
    sandboxes, image, new_session_id, docker_client
):
    spec = SandboxSpec(session_id=new_session_id(), **LIMITS)
    sandboxes.get_or_create(spec).write("kept.txt", "workspace survives")
    sandboxes._forget(spec.session_id)
    fresh_process_manager(image)[0].get_or_create(spec)._manager._forget(spec.session_id)  # records a hint
    key = volumes.session_key(spec.session_id)
    assert registry.container_hint(key) is not None

    sandboxes.hibernate(spec.session_id)  # removed: the hint names a container that is gone
    manager, calls = fresh_process_manager(image)
    assert manager.get_or_create(spec).read("kept.txt").content == "workspace survives"
    assert calls["inspect_container"] >= 1
    manager._forget(spec.session_id)

    docker_client.api.remove_container(sandboxes.connect(spec.session_id).container_name, force=True)
    sandboxes._forget(spec.session_id)
    manager, calls = fresh_process_manager(image)
    assert manager.get_or_create(spec).read("kept.txt").content == "workspace survives"  # recreated
    assert calls["inspect_container"] >= 1


def test_destroy_removes_the_hint(sandboxes, image, new_session_id):
    spec = SandboxSpec(session_id=new_session_id(), **LIMITS)
    sandboxes.get_or_create(spec)
    sandboxes._forget(spec.session_id)
    fresh_process_manager(image)[0].get_or_create(spec)._manager._forget(spec.session_id)
    key = volumes.session_key(spec.session_id)
    assert registry.container_hint(key) is not None
    sandboxes.destroy(spec.session_id)
    assert registry.container_hint(key) is None and registry.lookup(key) is None


def test_a_hint_naming_a_process_outside_the_container_is_not_trusted(sandboxes, image, new_session_id):
    # E.g. a worker in a pid namespace of its own, where the container's host pid names another process.
    spec = SandboxSpec(session_id=new_session_id(), **LIMITS)
    box = sandboxes.get_or_create(spec)
    sandboxes._forget(spec.session_id)
    key = volumes.session_key(spec.session_id)
    container_id = box._manager.api.inspect_container(box.container_name)["Id"]
    with open(f"/proc/{os.getpid()}/stat", "rb") as f:
        start = f.read().rsplit(b")", 1)[1].split()[19].decode()
    registry._hint_path(key).write_text(
        f"{container_id} {os.getpid()} {start}"
    )  # alive, but not the container's
    assert registry.process_start(os.getpid(), container_id) is None
    manager, calls = fresh_process_manager(image)
    assert manager.get_or_create(spec).exec("echo ok").output.strip() == "ok"
    assert calls["inspect_container"] == 1


def test_a_reaper_sweep_inspects_no_young_active_sandbox_and_asks_once_which_sessions_live(
    sandboxes, image, new_session_id
):
    """A sweep over a thousand live sandboxes was a thousand inspects and as many session queries: the
    listing's state and creation time leave out every container that cannot be due, and whether the
    sessions live and are archived is asked once for all of them."""
    from sandbox.reaper import Reaper

    live = [sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), **LIMITS)) for _ in range(2)]
    hibernated = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), **LIMITS))
    sandboxes.hibernate(hibernated.session_id)
    client, calls = counting_client()
    asked: list[set[str]] = []

    def alive_of(ids):
        asked.append(set(ids))
        return set(ids)

    def one_by_one(session_id):
        raise AssertionError("asked one session at a time")

    report = Reaper(
        DockerSandboxes(client, image=image, extra_labels=TEST_LABEL),
        one_by_one,
        is_session_archived=one_by_one,
        alive_of=alive_of,
        archived_of=lambda ids: set(),
        idle_ttl_s=600,
        only_labels=TEST_LABEL,
    ).run_once()
    assert not report.errors and not report.hibernated and not report.destroyed, report
    assert len(asked) == 1 and {box.session_id for box in live} <= asked[0]
    assert calls["inspect_container"] == 0
    assert all(sandboxes.is_running(box.session_id) for box in live)
    # Past their maximum lifetime (the listing's creation time says so), they are inspected and hibernated.
    due = Reaper(
        DockerSandboxes(image=image, extra_labels=TEST_LABEL),
        lambda s: True,
        idle_ttl_s=600,
        max_lifetime_s=0,
        only_labels=TEST_LABEL,
    ).run_once()
    assert {box.session_id for box in live} <= set(due.hibernated)
