"""Reconnect from another process, hibernate/resume, death mid-call, the warm pool, the reaper."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from sandbox import registry, volumes
from sandbox.manager import DockerSandboxes
from sandbox.pool import WarmPool
from sandbox.protocol import SandboxSpec, SandboxUnavailable
from sandbox.reaper import Reaper
from tests.sandbox.conftest import TEST_LABEL

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _in_subprocess(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"PYTHONPATH": REPO},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_second_process_reconnects_by_session_id_while_the_first_stays_attached(box):
    box.write("shared.txt", "from parent")
    out = _in_subprocess(f"""
        from sandbox.manager import DockerSandboxes
        sb = DockerSandboxes(image="unused").connect({box.session_id!r})
        print(sb.connection.mode, sb.read("shared.txt").content, sb.exec("echo child").output.strip())
        sb.write("from_child.txt", "hi")
    """)
    assert out.split() == ["relay", "from", "parent", "child"]
    assert box.read("from_child.txt").content == "hi"
    assert box.exec("echo parent still fine").exit_code == 0


def test_a_second_process_connecting_before_the_agent_listens_waits_for_it(box, docker_client):
    """A relay that starts before the agent has bound its socket (a container just started: the engine
    and another process connect at once) waits for it instead of failing the other process's call."""
    box.exec("true")  # answered: the agent has bound its socket (its first act)
    container = docker_client.containers.get(box.container_name)
    moved = "/run/hangar/agent.sock.away"

    def move(source: str, target: str) -> None:
        code, output = container.exec_run(["mv", source, target], user="root")
        assert code == 0, output

    move("/run/hangar/agent.sock", moved)  # the agent still listens; the path is not there yet
    try:
        threading.Timer(1.0, move, ("/run/hangar/agent.sock.away", "/run/hangar/agent.sock")).start()
        out = _in_subprocess(f"""
            from sandbox.manager import DockerSandboxes
            sb = DockerSandboxes(image="unused").connect({box.session_id!r})
            print(sb.connection.mode, sb.exec("echo waited").output.strip())
        """)
    finally:
        container.exec_run(["sh", "-c", f"[ -e {moved} ] && mv {moved} /run/hangar/agent.sock"], user="root")
    assert out.split() == ["relay", "waited"]


def test_hibernate_then_resume_keeps_the_workspace_and_snapshots(sandboxes, box, docker_client):
    box.write("persist/me.txt", "still here")
    tree = box.snapshot_track()
    sandboxes.hibernate(box.session_id)
    assert not sandboxes.is_running(box.session_id)
    # Nothing of a hibernated session stays in Docker: its image and record are all it costs.
    assert not docker_client.api.containers(all=True, filters={"name": box.container_name})
    resumed = sandboxes.resume(box.session_id)
    assert resumed.read("persist/me.txt").content == "still here"
    assert resumed.snapshot_diff(tree) == []
    labels = docker_client.api.inspect_container(box.container_name)["Config"]["Labels"]
    assert labels["hangar.session"] == box.session_id  # made again as it was first made


def test_when_the_container_dies_mid_call_the_caller_gets_unavailable_and_the_next_call_recovers(
    sandboxes, box, docker_client
):
    box.write("survivor.txt", "intact")
    killer = threading.Timer(0.5, lambda: docker_client.api.kill(box.container_name))
    killer.start()
    with pytest.raises(SandboxUnavailable):
        box.exec("sleep 30")
    assert box.read("survivor.txt").content == "intact"  # resumed transparently


def test_a_removed_container_is_recreated_on_its_volume(sandboxes, box, docker_client):
    box.write("kept.txt", "yes")
    box.close()
    docker_client.api.remove_container(box.container_name, force=True)
    again = sandboxes.get_or_create(
        SandboxSpec(session_id=box.session_id, memory_mb=256, pids=128, disk_mb=64)
    )
    assert again.read("kept.txt").content == "yes"


def test_every_attach_binds_the_sessions_env_so_a_lost_or_changed_env_is_put_right(
    sandboxes, docker_client, image, new_session_id
):
    sid = new_session_id()
    spec = dict(session_id=sid, memory_mb=256, pids=128, disk_mb=64)
    first = sandboxes.get_or_create(SandboxSpec(**spec, env={"STAGE": "one"}))
    assert first.exec("echo $STAGE").output.strip() == "one"
    # Another process (a second worker) attaches with the project's env as it is now.
    other = DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL)
    second = other.get_or_create(SandboxSpec(**spec, env={"STAGE": "two"}))
    assert second.exec("echo $STAGE").output.strip() == "two"
    second.close()


def test_warm_pool_claims_fast_binds_env_and_refills(docker_client, image, new_session_id):
    template = SandboxSpec(session_id="pool", memory_mb=256, pids=128, disk_mb=64)
    pool = WarmPool(2, template=template, client=docker_client, image=image, extra_labels=TEST_LABEL)
    manager = DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL, pool=pool)
    try:
        pool.fill()
        pooled = pool.available()
        assert len(pooled) == 2
        # Nothing of any tenant in a pooled container.
        spec = SandboxSpec(
            session_id=new_session_id(), memory_mb=256, pids=128, disk_mb=64, env={"TEAM": "alpha"}
        )
        start = time.monotonic()
        sb = manager.get_or_create(spec)
        result = sb.exec("echo $TEAM; ls -A /workspace | wc -l")
        elapsed = time.monotonic() - start
        assert result.output.split() == ["alpha", "0"]
        assert elapsed < 0.5
        assert sb.container_name not in pooled and len(pool.available()) == 1
        other = manager.get_or_create(
            SandboxSpec(session_id=new_session_id(), memory_mb=256, pids=128, disk_mb=64)
        )
        assert other.exec("echo ${TEAM:-none}").output.strip() == "none"
        assert pool.fill() == 2 and len(pool.available()) == 2
        # Other limits are set at claim time; only an allowlist spec never fits (test_egress).
        assert pool.fits(SandboxSpec(session_id="x", memory_mb=512))
    finally:
        pool.drain()


def test_after_an_image_upgrade_old_pooled_containers_are_never_claimed_and_get_retired(
    docker_client, image, new_session_id
):
    template = SandboxSpec(session_id="pool", memory_mb=256, pids=128, disk_mb=64)
    old_tag = "hangar-sandbox:previous-release-test"
    docker_client.images.get(image).tag(old_tag)  # same content, another tag: an "older release"
    old = WarmPool(1, template=template, client=docker_client, image=old_tag, extra_labels=TEST_LABEL)
    new = WarmPool(1, template=template, client=docker_client, image=image, extra_labels=TEST_LABEL)
    try:
        old.fill()
        stale = old.available()
        assert len(stale) == 1 and new.available() == []
        manager = DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL)
        assert (
            new.claim(manager, SandboxSpec(session_id=new_session_id(), memory_mb=256, pids=128, disk_mb=64))
            is None
        )
        new.fill()
        assert old.available() == [] and len(new.available()) == 1
        assert not docker_client.containers.list(all=True, filters={"name": stale[0]})
    finally:
        old.drain()
        new.drain()
        docker_client.images.remove(old_tag)


def test_two_processes_never_claim_the_same_pooled_container(docker_client, image, new_session_id):
    template = SandboxSpec(session_id="pool", memory_mb=256, pids=128, disk_mb=64)
    pool = WarmPool(1, template=template, client=docker_client, image=image, extra_labels=TEST_LABEL)
    try:
        pool.fill()
        winners = []
        sids = [new_session_id(), new_session_id()]

        def claim(sid):
            manager = DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL)
            winners.append(
                pool.claim(manager, SandboxSpec(session_id=sid, memory_mb=256, pids=128, disk_mb=64))
            )

        threads = [threading.Thread(target=claim, args=(s,)) for s in sids]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert sum(w is not None for w in winners) == 1
    finally:
        pool.drain()


def test_reaper_hibernates_idle_destroys_dead_and_tolerates_concurrent_runs(sandboxes, new_session_id):
    alive_idle = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), memory_mb=256, disk_mb=64))
    dead = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), memory_mb=256, disk_mb=64))
    busy = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), memory_mb=256, disk_mb=64))
    key = volumes.session_key(alive_idle.session_id)
    past = time.time() - 3600
    os.utime(volumes.ROOT / "sessions" / f"{key}.json", (past, past))
    dead_volume = registry.lookup(volumes.session_key(dead.session_id))["volume"]
    ours = {alive_idle.session_id, dead.session_id, busy.session_id}

    def is_alive(session_id: str) -> bool:
        return session_id != dead.session_id if session_id in ours else True

    reapers = [
        Reaper(DockerSandboxes(image="unused"), is_alive, idle_ttl_s=600, only_labels=TEST_LABEL)
        for _ in range(3)
    ]
    reports = []
    threads = [threading.Thread(target=lambda r=r: reports.append(r.run_once())) for r in reapers]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert all(not [e for e in r.errors if any(s in e for s in ours)] for r in reports)
    assert not sandboxes.is_running(alive_idle.session_id)
    assert registry.lookup(key) is not None  # hibernated, not destroyed
    assert registry.lookup(volumes.session_key(dead.session_id)) is None
    assert dead_volume not in volumes.list_volumes()
    assert sandboxes.is_running(busy.session_id)
    assert alive_idle.read  # resumes on demand:
    assert sandboxes.resume(alive_idle.session_id).exec("true").exit_code == 0


def test_reaper_stops_sandboxes_past_their_maximum_lifetime(sandboxes, box):
    report = Reaper(
        sandboxes, lambda s: True, idle_ttl_s=3600, max_lifetime_s=0, only_labels=TEST_LABEL
    ).run_once()
    assert box.session_id in report.hibernated


def test_the_reaper_never_hibernates_a_sandbox_mid_command(sandboxes, box):
    done = threading.Event()
    result = {}

    def run():
        result["exec"] = box.exec("touch started; sleep 4; echo finished", timeout_s=30)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    while box.stat("/workspace/started") is None:
        time.sleep(0.05)
    reaper = Reaper(sandboxes, lambda s: True, idle_ttl_s=0, max_lifetime_s=0, only_labels=TEST_LABEL)
    report = reaper.run_once()
    assert box.session_id not in report.hibernated and sandboxes.is_running(box.session_id), report
    assert done.wait(30) and result["exec"].output == "finished\n"
    assert box.session_id in reaper.run_once().hibernated  # idle now: hibernated as before


def test_the_reaper_never_hibernates_a_sandbox_whose_session_is_running(sandboxes, box):
    """A worker on another machine reaches the agent over TCP and never touches this host's idle clock
    (hangar.engine.workspace.remote): the session's run under way is what says the sandbox is in use."""
    running = {box.session_id}
    reaper = Reaper(
        sandboxes,
        lambda s: True,
        is_session_running=lambda s: s in running,
        idle_ttl_s=0,
        only_labels=TEST_LABEL,
    )
    report = reaper.run_once()
    assert box.session_id not in report.hibernated and sandboxes.is_running(box.session_id), report
    running.clear()  # the run ended: idle, hibernated as before
    assert box.session_id in reaper.run_once().hibernated
