"""Escape suite: each attack is contained, and the host and a neighbour sandbox are unaffected."""

import os
import time

import pytest

from sandbox.protocol import SandboxSpec
from tests.sandbox.conftest import host_gateway_ip


@pytest.fixture(scope="module")
def neighbour(sandboxes):
    sid = f"tneighbour-{os.getpid()}"
    sb = sandboxes.get_or_create(SandboxSpec(session_id=sid, memory_mb=256, pids=128, disk_mb=64))
    sb.write("mine.txt", "neighbour data")
    yield sb
    sandboxes.destroy(sid)


def assert_unaffected(neighbour):
    start = time.monotonic()
    assert neighbour.exec("cat mine.txt").output == "neighbour data"
    assert time.monotonic() - start < 2
    with open("/proc/loadavg") as f:
        assert f.read()  # the host still answers


def test_fork_bomb_is_contained(box, neighbour):
    result = box.exec("bomb() { bomb | bomb & }; bomb; sleep 2", timeout_s=4)
    assert result.status in ("timeout", "exited")
    assert_unaffected(neighbour)
    box.kill_all()  # the sandbox recovers without a restart
    assert int(box.exec("cat /sys/fs/cgroup/pids/pids.max").output) <= 128
    assert int(box.exec("ps -e --no-headers | wc -l").output) < 10  # the bomb is gone


def test_memory_bomb_is_killed_inside_its_cgroup(box, neighbour):
    result = box.exec("python3 -c 'x = []\nwhile True: x.append(bytearray(10**7))'", timeout_s=30)
    assert result.status == "exited" and result.exit_code in (137, -9)
    assert box.exec("echo agent alive").output == "agent alive\n"
    assert_unaffected(neighbour)


def test_disk_fill_stops_at_the_quota(box, neighbour):
    result = box.exec(
        "dd if=/dev/zero of=/workspace/fill bs=1M count=500 2>&1; df -m /workspace | tail -1", timeout_s=60
    )
    assert "No space left on device" in result.output
    assert box.stat("fill").size <= 64 * 1024 * 1024
    tmp = box.exec("dd if=/dev/zero of=/tmp/fill bs=1M count=400 2>&1", timeout_s=60)
    assert "No space left on device" in tmp.output or tmp.exit_code != 0
    assert_unaffected(neighbour)


def test_output_flood_is_capped(box, neighbour):
    start = time.monotonic()
    result = box.exec("yes flood", timeout_s=3, max_output=64_000)
    assert result.status == "timeout" and len(result.output) < 70_000 and result.dropped_bytes > 0
    assert time.monotonic() - start < 8
    assert_unaffected(neighbour)


NET_TARGETS = ["1.1.1.1:443", "169.254.169.254:80", "127.0.0.1:5432", "127.0.0.1:6379"]


def _probe(box, target: str) -> str:
    host, port = target.rsplit(":", 1)
    code = f"import socket; s=socket.socket(); s.settimeout(2); print(s.connect_ex(({host!r}, {port})))"
    return box.exec(f'python3 -c "{code}" 2>&1; getent hosts example.com || echo nodns', timeout_s=10).output


@pytest.mark.parametrize("target", [*NET_TARGETS, "GATEWAY:5432", "GATEWAY:6379", "NEIGHBOUR"])
def test_network_is_unreachable(box, neighbour, docker_client, target):
    if target.startswith("GATEWAY"):
        target = host_gateway_ip() + target[len("GATEWAY") :]
    if target == "NEIGHBOUR":
        ip = docker_client.api.inspect_container(neighbour.container_name)["NetworkSettings"]["IPAddress"]
        target = f"{ip or '172.17.0.2'}:22"
    out = _probe(box, target).split()
    assert out[0] != "0" and "nodns" in out  # connect failed; no name resolution either
    assert box.exec("ls /sys/class/net").output.split() == ["lo"]


def test_no_docker_socket_is_reachable(box):
    out = box.exec(
        "ls -la /var/run/docker.sock /run/docker.sock 2>&1; find / -name '*.sock' -not -path '/proc/*' 2>/dev/null"
    )
    assert (
        "docker.sock" not in out.output.replace("No such file", "").split("\n")[-2:][0]
        or "No such file" in out.output
    )
    assert "docker.sock" not in box.exec("find / -name 'docker.sock' 2>/dev/null").output


def test_setuid_binaries_do_not_grant_root(box):
    status = box.exec("grep -E 'NoNewPrivs|CapEff|CapPrm|CapInh|CapAmb|CapBnd' /proc/self/status").output
    assert "NoNewPrivs:\t1" in status
    for held in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
        assert f"{held}:\t0000000000000000" in status, status
    # The bounding set keeps SETUID|SETGID (the agent's one drop from root needs them; nothing can drop
    # them later without CAP_SETPCAP): a ceiling, not a grant. With no-new-privileges no exec raises the
    # permitted set to it, and the checks below show it.
    assert "CapBnd:\t00000000000000c0" in status, status
    result = box.exec(
        "ls -l /bin/su /bin/mount; su -c id root </dev/null 2>&1; mount -t tmpfs none /tmp 2>&1; id -u"
    )
    assert "uid=0" not in result.output and result.output.strip().endswith("1000")


def test_mount_is_denied(box):
    result = box.exec(
        "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>&1; mount --bind /workspace /tmp/m 2>&1"
    )
    assert "tmpfs" not in box.exec("grep /tmp/m /proc/mounts || true").output
    assert (
        result.output.count("must be superuser")
        + result.output.count("ermission denied")
        + result.output.count("not permitted")
        >= 1
    )


def test_sysrq_trigger_cannot_be_written(box):
    result = box.exec("echo h > /proc/sysrq-trigger 2>&1; echo rc=$?")
    assert "rc=0" not in result.output
    assert_root_fs_read_only = box.exec("touch /usr/bin/evil 2>&1; echo rc=$?").output
    assert "Read-only file system" in assert_root_fs_read_only


def test_the_workers_environment_is_not_visible_inside(box, monkeypatch):
    monkeypatch.setenv("HANGAR_TEST_SECRET", "s3cr3t-value-123")
    out = box.exec(
        "env; cat /proc/1/environ | tr '\\0' '\\n'; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"
    )
    assert "s3cr3t-value-123" not in out.output and "HANGAR_TEST_SECRET" not in out.output


def test_the_agents_relay_socket_is_out_of_reach_and_the_agent_keeps_serving(box):
    # The relay socket is root's (only root's relay, docker exec, may connect): a command cannot feed it.
    out = box.exec(
        'head -c 200000 /dev/urandom | python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX);'
        " s.connect('/run/hangar/agent.sock'); s.sendall(sys.stdin.buffer.read()); s.close()\" 2>&1"
    ).output
    assert "PermissionError" in out, out
    assert box.exec("echo ok").output == "ok\n"


def _cpu_seconds(container_id: str) -> float:
    """CPU time the container's cgroup has used, from the host (cgroup v1 or v2)."""
    for path in (
        f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage",
        f"/sys/fs/cgroup/cpu,cpuacct/docker/{container_id}/cpuacct.usage",
    ):
        if os.path.exists(path):
            with open(path) as f:
                return int(f.read()) / 1e9
    for path in (
        f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat",
        f"/sys/fs/cgroup/docker/{container_id}/cpu.stat",
    ):
        if os.path.exists(path):
            with open(path) as f:
                stats = dict(line.split() for line in f)
            return int(stats["usage_usec"]) / 1e6
    raise AssertionError(f"no cgroup cpu accounting found for {container_id}")


def test_cpu_hog_is_held_to_its_cpu_share(sandboxes, new_session_id, neighbour, docker_client):
    hog = sandboxes.get_or_create(
        SandboxSpec(session_id=new_session_id(), cpus=0.5, memory_mb=256, pids=128, disk_mb=64)
    )
    container_id = docker_client.api.inspect_container(hog.container_name)["Id"]
    # Two busy loops: together they would take both host cores without the limit.
    hog.exec("for i in 1 2; do nohup bash -c 'while :; do :; done' >/dev/null 2>&1 & done")
    try:
        time.sleep(0.5)  # past the first CFS period
        start_cpu, start = _cpu_seconds(container_id), time.monotonic()
        slowest = 0.0
        while time.monotonic() - start < 2.0:
            t = time.monotonic()
            assert neighbour.exec("true").exit_code == 0
            slowest = max(slowest, time.monotonic() - t)
            time.sleep(0.1)
        cores = (_cpu_seconds(container_id) - start_cpu) / (time.monotonic() - start)
        assert 0.1 < cores <= 0.5 * 1.15, cores  # it ran, and no more than its half core
        assert slowest < 0.5, slowest  # the neighbour's no-op stays fast meanwhile
    finally:
        hog.kill_all()
    assert_unaffected(neighbour)
