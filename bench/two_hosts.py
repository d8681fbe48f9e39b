"""Two hosts on one machine: a tool call to an agent on host A (this machine's engine) against one on host B
(deploy/hosts/hostb.sh's second dockerd, reached over the private link's route), cold starts on each, and
a workspace moved from B to A (export, import), one run.

Run from the repo root: .venv/bin/python bench/two_hosts.py [--samples 500] [--workspace-mb 20]
Starts host B if it is not running. This process is both hosts' service (B's: its socket, the sandbox root
HANGAR_SANDBOX_ROOT + "-hostb", its network namespace) and the engine's side, whose calls go over the TCP
channel, interleaved in blocks of 50 so both hosts see the same machine load. The LAST line is one JSON
object with the figures. Everything it creates is labelled hangar.bench=1 and removed at the end.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import docker
from common import arguments, emit, log, percentile

from sandbox import channel, volumes, workspace_archive
from sandbox.channel_client import connect_session
from sandbox.image import ensure_image
from sandbox.manager import DockerSandboxes
from sandbox.protocol import SandboxSpec

LABELS = {"hangar.bench": "1"}
BLOCK = 50
REPO = Path(__file__).resolve().parents[1]
CALLS = {"stat": ("stat", {"path": "/workspace"}), "exec_true": ("exec", {"command": "true", "timeout": 30})}


def host_b() -> tuple[docker.DockerClient, dict[str, str]]:
    script = str(REPO / "deploy" / "hosts" / "hostb.sh")
    subprocess.run([script, "up"], check=True, capture_output=True)
    env = dict(line.split("=", 1) for line in subprocess.check_output([script, "env"], text=True).split())
    client = docker.DockerClient(base_url=env.pop("DOCKER_HOST"))
    return client, env | {"HANGAR_AGENT_SUBNET": "10.213.x.0/24"}


@contextmanager
def acting_as(root: Path, env: dict[str, str]):
    """This process as a host's service: its sandbox root and settings, and back."""
    before = volumes.ROOT, {k: os.environ.get(k) for k in env}
    volumes.ROOT = root
    os.environ.update(env)
    try:
        yield
    finally:
        volumes.ROOT = before[0]
        for k, v in before[1].items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def timed(fn, *args):
    t = time.perf_counter()
    value = fn(*args)
    return value, round((time.perf_counter() - t) * 1000, 1)


def main() -> None:
    opts = arguments(
        __doc__,
        ("--samples", {"type": int, "default": 500}),
        ("--workspace-mb", {"type": int, "default": 20}),
    )
    os.environ[channel.SETTING] = "tcp"
    b_client, b_env = host_b()
    roots = {"a": volumes.ROOT, "b": Path(f"{str(volumes.ROOT).rstrip('/')}-hostb")}
    envs: dict[str, dict[str, str]] = {"a": {}, "b": b_env}
    image = ensure_image()
    managers = {
        "a": DockerSandboxes(docker.from_env(), image=image, extra_labels=LABELS),
        "b": DockerSandboxes(b_client, image=image, extra_labels=LABELS),
    }
    sids = {h: f"bench-{h}-{uuid.uuid4().hex[:8]}" for h in managers}
    archive = tempfile.mkdtemp(prefix="hangar-bench-archive-")
    os.environ[workspace_archive.SETTING] = archive
    result: dict[str, float] = {}
    conns = {}
    try:
        for h, manager in managers.items():
            spec = SandboxSpec(session_id=sids[h], memory_mb=512, pids=256, disk_mb=1024)
            with acting_as(roots[h], envs[h]):
                _, result[f"cold_start_{h}_ms"] = timed(manager.get_or_create, spec)
                conns[h] = connect_session(sids[h]).connection
        for name, (op, args) in CALLS.items():
            samples: dict[str, list[float]] = {"a": [], "b": []}
            for block in range(max(1, opts.samples // BLOCK)):
                for h in ("a", "b")[:: 1 if block % 2 == 0 else -1]:
                    for _ in range(BLOCK):
                        t = time.perf_counter()
                        conns[h].call(op, args, timeout=30)
                        samples[h].append((time.perf_counter() - t) * 1000)
            for h, walls in samples.items():
                p50, p95 = percentile(walls, 0.5), percentile(walls, 0.95)
                log(f"{name:10s} host {h}  n={len(walls):5d}  p50={p50:7.3f} ms  p95={p95:7.3f} ms")
                result[f"{name}_{h}_p50_ms"], result[f"{name}_{h}_p95_ms"] = round(p50, 3), round(p95, 3)
            result[f"{name}_b_over_a"] = round(result[f"{name}_b_p50_ms"] / result[f"{name}_a_p50_ms"], 2)
        # A workspace of --workspace-mb of files (half text, half random) moved from B to A.
        with acting_as(roots["b"], envs["b"]):
            box = managers["b"].connect(sids["b"])
            half = opts.workspace_mb // 2
            box.exec(
                f"cd /workspace && head -c {half}M /dev/urandom > random.bin"
                f" && yes 'some source text, line after line' | head -c {half}M > text.txt",
                timeout_s=120,
            )
            box.snapshot_track()
            managers["b"].hibernate(sids["b"])
            moved = workspace_archive.export(b_client.api, sids["b"])
        result["export_bytes"] = moved["bytes"]
        result["export_s"] = moved["seconds"]
        imported = workspace_archive.import_(sids["b"])
        result["import_s"] = imported["seconds"] if imported else -1
        _, result["resume_on_a_after_import_ms"] = timed(managers["a"].get_or_create, spec_for(sids["b"]))
    finally:
        for conn in conns.values():
            conn.close()
        managers["a"].destroy(sids["a"])
        managers["a"].destroy(sids["b"])
        with acting_as(roots["b"], envs["b"]):
            managers["b"].destroy(sids["b"])
        subprocess.run(["rm", "-rf", archive], check=False)
    emit(result)


def spec_for(session_id: str) -> SandboxSpec:
    return SandboxSpec(session_id=session_id, memory_mb=512, pids=256, disk_mb=1024)


if __name__ == "__main__":
    main()
