"""Sandbox benchmark: bare Docker baselines against Hangar's sandbox paths.

Run from the repo root: .venv/bin/python bench/sandbox.py [--samples 50]
Prints p50/p95 per measurement; the LAST line is one JSON object with the headline numbers.
Everything it creates is labelled hangar.bench=1 and removed at the end.

CPU figures are the in-container agent's (utime+stime of its pid and of the children it waited for,
read from the host's /proc), which other load on the machine distorts far less than wall times.
The snapshot section also runs the git-based tracker of BASELINE (read with `git show`) against the
current one in one process inside a sandbox, interleaved on the same workspace (a handful of files,
and 5,000), so both are measured under the same load.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import docker
from common import ROOT, arguments, emit, percentile

from sandbox import registry, volumes
from sandbox.image import base_tag, ensure_image
from sandbox.manager import DockerSandboxes
from sandbox.pool import WarmPool
from sandbox.protocol import SandboxSpec

LABELS = {"hangar.bench": "1"}
BASELINE = "c10c375"  # the last commit whose snapshots.py tracked with git processes

SNAPSHOT_PROBE = Path(__file__).with_name("snapshot_probe.py")  # run inside a sandbox


def report(name: str, samples_ms: list[float]) -> float:
    p50 = statistics.median(samples_ms)
    print(
        f"{name:32s} n={len(samples_ms):4d}  p50={p50:8.3f} ms  p95={percentile(samples_ms, 0.95):8.3f} ms",
        flush=True,
    )
    return round(p50, 3)


def bare_docker_run(client: docker.DockerClient, image: str, n: int) -> list[float]:
    """create + attach + start of `echo hi`, until its output arrives (like `docker run`)."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        c = client.api.create_container(image, ["echo", "hi"], labels=LABELS)
        sock = client.api.attach_socket(c["Id"], params={"stdout": 1, "stream": 1})
        client.api.start(c["Id"])
        raw = getattr(sock, "_sock", sock)
        data = b""
        while b"hi" not in data:
            chunk = raw.recv(4096)
            if not chunk:
                break
            data += chunk
        out.append((time.perf_counter() - t) * 1000)
        sock.close()
        client.api.remove_container(c["Id"], force=True)
    return out


def spec(sid: str) -> SandboxSpec:
    return SandboxSpec(session_id=sid, memory_mb=512, pids=256, disk_mb=256)


def agent_cpu(client: docker.DockerClient, box) -> Callable[[], float]:
    """A function returning the agent's CPU so far (ms, with the children it waited for), from the
    host's /proc: the container's init is docker-init, its only child is the agent."""
    init = client.api.inspect_container(box.container_name)["State"]["Pid"]
    pid = int(Path(f"/proc/{init}/task/{init}/children").read_text().split()[0])
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) * 1000 / tick

    return read


def timed(fn, n: int, cpu) -> tuple[list[float], float]:
    """Wall samples (ms) of `n` calls and the agent's CPU per call (ms)."""
    walls, before = [], cpu()
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        walls.append((time.perf_counter() - t) * 1000)
    return walls, (cpu() - before) / n


def _snapshot_via_agent(box, size: str, n: int, cpu: Callable[[], float]) -> dict:
    """A writing step's track (one file edited) and a step that changed nothing, through the agent.
    The agent's CPU for the write alone is measured apart and taken off."""
    last = [box.snapshot_track()]
    time.sleep(0.1)  # past the racy window, as between real steps

    def edit(i: int) -> None:
        box.write("src/a.py", f"edit {i}\n")
        last[0], _ = box.snapshot_track_changed(last[0])

    _, write_cpu = timed(lambda i: box.write("src/a.py", f"edit {i}\n"), n, cpu)
    edited, edit_cpu = timed(edit, n, cpu)
    same, same_cpu = timed(lambda i: box.snapshot_track_changed(last[0]), n, cpu)
    print(f"{'':32s} agent CPU per track: {edit_cpu - write_cpu:.2f} ms edited, {same_cpu:.2f} ms unchanged")
    return {
        f"snapshot_{size}_edited_p50_ms": report(f"write + track_changed ({size})", edited),
        f"snapshot_{size}_unchanged_p50_ms": report(f"track_changed, no edit ({size})", same),
        f"snapshot_{size}_edited_agent_cpu_ms": round(edit_cpu - write_cpu, 2),
        f"snapshot_{size}_unchanged_agent_cpu_ms": round(same_cpu, 2),
    }


def snapshot_section(manager: DockerSandboxes, client: docker.DockerClient, made: list[str], n: int) -> dict:
    """Per-step snapshot costs through the agent (a handful of files and 5,000), then the git-based
    tracker of BASELINE against the current one inside the sandbox."""
    result: dict[str, float] = {}
    small = "mkdir -p src && for f in a b c d e; do seq 40 > src/$f.py; done"
    big = (
        small
        + "; for d in $(seq 250); do mkdir -p big/d$d; for f in $(seq 20); do echo $d.$f > big/d$d/f$f.txt; done; done"
    )
    for size, setup in (("small", small), ("big", big)):
        # A sandbox each, and fewer than 50 trees in each: the background gc (every 50 new trees) stays
        # out of the window and is measured apart.
        sid = f"bench-{uuid.uuid4().hex[:10]}"
        box = manager.get_or_create(SandboxSpec(session_id=sid, memory_mb=1024, pids=256, disk_mb=1024))
        made.append(sid)
        cpu = agent_cpu(client, box)
        box.exec(setup)
        result.update(_snapshot_via_agent(box, size, min(max(n, 20), 45), cpu))
        gc_walls, gc_cpu = timed(lambda i, box=box: box.snapshot_gc(), 1, cpu)
        result[f"snapshot_{size}_gc_agent_cpu_ms"] = round(gc_cpu, 1)
        print(
            f"{'snapshot gc (' + size + ')':32s} wall={gc_walls[0]:.0f} ms  agent CPU={gc_cpu:.0f} ms "
            f"(one every 50 new trees: {gc_cpu / 50:.2f} ms a writing step)"
        )

    try:
        old = subprocess.run(
            ["git", "show", f"{BASELINE}:sandbox/agent/snapshots.py"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        print(f"(no baseline comparison: cannot read {BASELINE} with git)")
        return result
    box.exec("mkdir -p /tmp/baseline")
    box.write("/tmp/baseline/old_snapshots.py", old)
    box.write("/tmp/snapshot_probe.py", SNAPSHOT_PROBE.read_text())
    run = box.exec(f"python3 -S /tmp/snapshot_probe.py {max(n, 40)} 20", timeout_s=600)
    if run.exit_code != 0:
        raise RuntimeError(f"snapshot probe failed: {run.output[-2000:]}")
    probe = json.loads(run.output.strip().splitlines()[-1])
    for size, figures in probe.items():
        print(
            f"{'snapshot ' + size + ' (in-process)':32s} "
            + "  ".join(
                f"{k}={figures[f'{who}_{k}']}/{figures[f'new_{k}'] if who == 'old' else ''}".rstrip("/")
                for who in ("old",)
                for k in ("edit_wall", "edit_cpu", "edit_spawns", "same_wall", "same_cpu", "first_track_ms")
            )
            + "   (old/new)"
        )
        for k, v in figures.items():
            result[f"snap_{size}_{k}"] = v
    return result


def first_contact_section(
    manager: DockerSandboxes, client: docker.DockerClient, made: list[str], n: int
) -> dict:
    """Worker CPU of a process's first contact with a running session (nothing cached, as another
    worker process): the previous path (inspect, and requests scanning the environment for proxies on
    every call) against the registry's hint (attach only), interleaved."""
    sid = f"bench-{uuid.uuid4().hex[:10]}"
    sp = SandboxSpec(session_id=sid, memory_mb=256, pids=128, disk_mb=64, env={"TEAM": "bench"})
    manager.get_or_create(sp)
    made.append(sid)
    manager._forget(sid)  # let go of the attach lock: the fresh managers attach, as a worker would
    key = volumes.session_key(sid)
    samples: dict[str, list[float]] = {"before": [], "hint": []}
    for i in range(max(n, 40)):
        for variant in ("before", "hint") if i % 2 else ("hint", "before"):
            fresh = DockerSandboxes(client, image=manager.image)
            if variant == "before":
                registry._hint_path(key).unlink(missing_ok=True)
                fresh.api.trust_env = True
            t = time.process_time()
            fresh.get_or_create(sp)
            samples[variant].append((time.process_time() - t) * 1000)
            fresh._forget(sid)
    client.api.trust_env = False
    result = {f"first_contact_{k}_worker_cpu_ms": round(statistics.median(v), 2) for k, v in samples.items()}
    print(
        f"{'first contact, worker CPU':32s} p50 before={result['first_contact_before_worker_cpu_ms']} ms  "
        f"with the hint={result['first_contact_hint_worker_cpu_ms']} ms"
    )
    return result


def cold_section(manager: DockerSandboxes, made: list[str], n: int) -> dict:
    """Cold create -> first exec, keeping the last 20 sandboxes for the sections after."""
    cold = []
    for _ in range(n):
        sid = f"bench-{uuid.uuid4().hex[:10]}"
        t = time.perf_counter()
        box = manager.get_or_create(spec(sid))
        box.exec("true")
        cold.append((time.perf_counter() - t) * 1000)
        made.append(sid)
        if len(made) > 20:
            manager.destroy(made.pop(0))
    return {"cold_first_exec_p50_ms": report("cold create -> first exec", cold)}


def idle_memory_section(manager: DockerSandboxes, client: docker.DockerClient, made: list[str]) -> dict:
    """Idle memory across the last 20 idle sandboxes, from their cgroups (v1, cgroupfs driver)."""
    time.sleep(2)
    rss, usage = [], []
    for sid in made[-20:]:
        cid = client.api.inspect_container(manager.connect(sid).container_name)["Id"]
        base = f"/sys/fs/cgroup/memory/docker/{cid}"
        stat = dict(line.split() for line in Path(f"{base}/memory.stat").read_text().splitlines())
        rss.append(int(stat["total_rss"]) / 2**20)
        usage.append(int(Path(f"{base}/memory.usage_in_bytes").read_text()) / 2**20)
    print(
        f"{'idle sandbox memory (' + str(len(rss)) + ')':32s} rss mean={statistics.mean(rss):.1f} MB  "
        f"cgroup usage mean={statistics.mean(usage):.1f} MB (includes page cache)"
    )
    return {
        "idle_sandbox_rss_mb": round(statistics.mean(rss), 2),
        "idle_sandbox_cgroup_usage_mb": round(statistics.mean(usage), 2),
    }


def ops_section(manager: DockerSandboxes, client: docker.DockerClient, sid: str, n: int) -> dict:
    """docker exec against the agent's exec, round trip and a 10 KB write + read, on one sandbox."""
    box = manager.connect(sid)
    container = client.containers.get(box.container_name)
    docker_exec = []
    for _ in range(n):
        t = time.perf_counter()
        container.exec_run("true")
        docker_exec.append((time.perf_counter() - t) * 1000)
    result = {"docker_exec_p50_ms": report("docker exec_run('true')", docker_exec)}
    for _ in range(20):
        box.exec("true")
    payload = "x" * 10_239 + "\n"

    def write_read(i: int) -> None:
        box.write(f"bench/{i % 10}.txt", payload)
        box.read(f"bench/{i % 10}.txt")

    for key, name, fn, count in (
        ("agent_exec_p50_ms", "agent exec('true')", lambda _i: box.exec("true"), max(n, 200)),
        ("agent_roundtrip_p50_ms", "agent JSON round trip (ping)", lambda _i: box.ping(), max(n, 500)),
        ("write_read_10kb_p50_ms", "write + read 10 KB", write_read, max(n, 200)),
    ):
        walls = []
        for i in range(count):
            t = time.perf_counter()
            fn(i)
            walls.append((time.perf_counter() - t) * 1000)
        result[key] = report(name, walls)
    return result


def warm_section(manager: DockerSandboxes, pool: WarmPool, n: int) -> dict:
    """A claim from the warm pool -> first exec."""
    warm = []
    for _ in range(n):
        pool.fill()
        sid = f"bench-{uuid.uuid4().hex[:10]}"
        t = time.perf_counter()
        box = manager._remember(pool.claim(manager, spec(sid)))
        box.exec("true")
        warm.append((time.perf_counter() - t) * 1000)
        manager.destroy(sid)
    return {"warm_claim_first_exec_p50_ms": report("warm claim -> first exec", warm)}


def main() -> None:
    args = arguments(
        __doc__,
        ("--samples", {"type": int, "default": 50}),
        (
            "--only",
            {"choices": ["snapshots", "first_contact"], "help": "run one section and print its figures"},
        ),
    )
    n = args.samples
    client = docker.from_env()
    image = ensure_image(client)
    manager = DockerSandboxes(client, image=image, extra_labels=LABELS)
    made: list[str] = []
    result: dict[str, float] = {}
    if args.only:
        section = {"snapshots": snapshot_section, "first_contact": first_contact_section}[args.only]
        try:
            result.update(section(manager, client, made, n))
        finally:
            for sid in made:
                manager.destroy(sid)
        emit(result)
        return
    pool = WarmPool(3, template=spec("pool"), client=client, image=image, extra_labels=LABELS)
    try:
        result["docker_run_p50_ms"] = report(
            "docker run (base image)", bare_docker_run(client, base_tag(), n)
        )
        result.update(cold_section(manager, made, n))
        result.update(idle_memory_section(manager, client, made))
        result.update(ops_section(manager, client, made[-1], n))
        result.update(snapshot_section(manager, client, made, n))
        result.update(first_contact_section(manager, client, made, n))
        for sid in made:
            manager.destroy(sid)
        made.clear()
        result.update(warm_section(manager, pool, n))
    finally:
        for sid in made:
            manager.destroy(sid)
        pool.drain()
    result["agent_vs_docker_exec_speedup"] = round(
        result["docker_exec_p50_ms"] / result["agent_exec_p50_ms"], 1
    )
    result["cold_vs_docker_run_ratio"] = round(
        result["cold_first_exec_p50_ms"] / result["docker_run_p50_ms"], 2
    )
    emit(result)


if __name__ == "__main__":
    main()
