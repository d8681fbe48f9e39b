"""Sandbox benchmark: bare Docker baselines against Hangar's sandbox paths.

Run from the repo root: .venv/bin/python bench/sandbox.py [--samples 50]
Prints p50/p95 per measurement; the LAST line is one JSON object with the headline numbers.
Everything it creates is labelled hangar.bench=1 and removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import docker  # noqa: E402

from sandbox.image import base_tag, ensure_image  # noqa: E402
from sandbox.manager import DockerSandboxes  # noqa: E402
from sandbox.pool import WarmPool  # noqa: E402
from sandbox.protocol import SandboxSpec  # noqa: E402

LABELS = {"hangar.bench": "1"}


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report(name: str, samples_ms: list[float]) -> float:
    p50 = statistics.median(samples_ms)
    print(f"{name:32s} n={len(samples_ms):4d}  p50={p50:8.3f} ms  p95={pct(samples_ms, 0.95):8.3f} ms", flush=True)
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=50)
    n = parser.parse_args().samples
    client = docker.from_env()
    image = ensure_image(client)
    manager = DockerSandboxes(client, image=image, extra_labels=LABELS)
    made: list[str] = []
    result: dict[str, float] = {}
    pool = WarmPool(3, template=spec("pool"), client=client, image=image, extra_labels=LABELS)
    try:
        result["docker_run_p50_ms"] = report("docker run (base image)", bare_docker_run(client, base_tag(), n))

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
        result["cold_first_exec_p50_ms"] = report("cold create -> first exec", cold)

        # Idle memory across 20 idle sandboxes, from their cgroups (v1, cgroupfs driver).
        time.sleep(2)
        rss, usage = [], []
        for sid in made[-20:]:
            cid = client.api.inspect_container(manager.connect(sid).container_name)["Id"]
            base = f"/sys/fs/cgroup/memory/docker/{cid}"
            stat = dict(line.split() for line in open(f"{base}/memory.stat"))
            rss.append(int(stat["total_rss"]) / 2**20)
            usage.append(int(open(f"{base}/memory.usage_in_bytes").read()) / 2**20)
        print(f"{'idle sandbox memory (20)':32s} rss mean={statistics.mean(rss):.1f} MB  "
              f"cgroup usage mean={statistics.mean(usage):.1f} MB (includes page cache)")
        result["idle_sandbox_rss_mb"] = round(statistics.mean(rss), 2)
        result["idle_sandbox_cgroup_usage_mb"] = round(statistics.mean(usage), 2)

        box = manager.connect(made[-1])
        container = client.containers.get(box.container_name)
        docker_exec = []
        for _ in range(n):
            t = time.perf_counter()
            container.exec_run("true")
            docker_exec.append((time.perf_counter() - t) * 1000)
        result["docker_exec_p50_ms"] = report("docker exec_run('true')", docker_exec)

        for _ in range(20):
            box.exec("true")
        agent_exec, ping, write_read = [], [], []
        for _ in range(max(n, 200)):
            t = time.perf_counter()
            box.exec("true")
            agent_exec.append((time.perf_counter() - t) * 1000)
        for _ in range(max(n, 500)):
            t = time.perf_counter()
            box.ping()
            ping.append((time.perf_counter() - t) * 1000)
        payload = "x" * 10_239 + "\n"
        for i in range(max(n, 200)):
            t = time.perf_counter()
            box.write(f"bench/{i % 10}.txt", payload)
            box.read(f"bench/{i % 10}.txt")
            write_read.append((time.perf_counter() - t) * 1000)
        result["agent_exec_p50_ms"] = report("agent exec('true')", agent_exec)
        result["agent_roundtrip_p50_ms"] = report("agent JSON round trip (ping)", ping)
        result["write_read_10kb_p50_ms"] = report("write + read 10 KB", write_read)

        # A step's snapshot: one file edited (add + write-tree) or nothing changed (one listing).
        edited, unchanged, two_calls = [], [], []
        last = box.snapshot_track()
        for i in range(max(n, 40)):
            box.write(f"bench/{i % 10}.txt", f"edit {i}\n")
            t = time.perf_counter()
            last, _ = box.snapshot_track_changed(last)
            edited.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            box.snapshot_track_changed(last)
            unchanged.append((time.perf_counter() - t) * 1000)
            box.write(f"bench/{i % 10}.txt", f"again {i}\n")
            t = time.perf_counter()
            tree = box.snapshot_track()
            box.snapshot_changed(last, tree)
            two_calls.append((time.perf_counter() - t) * 1000)
            last = tree
        result["snapshot_edited_p50_ms"] = report("snapshot_track_changed, 1 edit", edited)
        result["snapshot_unchanged_p50_ms"] = report("snapshot_track_changed, no edit", unchanged)
        result["snapshot_track_then_changed_p50_ms"] = report("snapshot_track + _changed, 1 edit", two_calls)

        for sid in made:
            manager.destroy(sid)
        made.clear()

        warm = []
        for _ in range(n):
            pool.fill()
            sid = f"bench-{uuid.uuid4().hex[:10]}"
            t = time.perf_counter()
            box = manager._remember(pool.claim(manager, spec(sid)))
            box.exec("true")
            warm.append((time.perf_counter() - t) * 1000)
            manager.destroy(sid)
        result["warm_claim_first_exec_p50_ms"] = report("warm claim -> first exec", warm)
    finally:
        for sid in made:
            manager.destroy(sid)
        pool.drain()
    result["agent_vs_docker_exec_speedup"] = round(result["docker_exec_p50_ms"] / result["agent_exec_p50_ms"], 1)
    result["cold_vs_docker_run_ratio"] = round(result["cold_first_exec_p50_ms"] / result["docker_run_p50_ms"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
