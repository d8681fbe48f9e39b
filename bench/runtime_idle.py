"""What an idle container costs the container runtime: the CPU of its containerd-shim while nothing
happens in it, the floor under every live sandbox however little its session does.

    .venv/bin/python bench/runtime_idle.py [--containers 100] [--window 120]

Makes --containers containers of the sandbox image (`sleep infinity`, no network, no log driver: as idle
as a sandbox gets), then reads, over --window seconds, the CPU of their shims (each thread's run time
from /proc/<pid>/task/<tid>/schedstat, in nanoseconds: a shim wakes for tens of microseconds at a time,
which 10-ms tick accounting charges by chance), of containerd and of dockerd, and the shims' memory
(PSS). Then removes them. The window should be long: some of the shims' wake-ups are minutes apart (the
Go runtime's forced collection every two minutes), so a 20-s window reads anywhere from a tenth to
one and a half times the mean. The last line printed is one JSON object, with what the shims alone take of
this machine's CPU at 1,000 live sandboxes.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import docker
from common import arguments, emit, log
from density_probe import processes, pss_kb, shims_of

from sandbox.image import ensure_image

LABEL = "hangar.bench.runtime_idle"


def _run_ns(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                total += int(stat.read_text().split()[0])
            except (OSError, ValueError):
                continue
    return total


def main() -> None:
    args = arguments(
        __doc__,
        ("--containers", {"type": int, "default": 100}),
        ("--window", {"type": float, "default": 120.0, "help": "seconds of idle measured"}),
    )
    client = docker.from_env()
    image = ensure_image(client)
    run = uuid.uuid4().hex[:8]
    ids = []
    try:
        for index in range(args.containers):
            box = client.containers.run(
                image,
                ["sleep", "infinity"],
                name=f"hangar-idle-{run}-{index}",
                detach=True,
                network_mode="none",
                log_config=docker.types.LogConfig(type="none"),
                labels={LABEL: run},
            )
            ids.append(box.id)
        log(f"{len(ids)} idle containers made")
        time.sleep(5)  # their starts settle
        shims = shims_of(set(ids))
        every_shim = set(processes("containerd-shim"))
        containerd = [p for p in processes("containerd") if p not in every_shim]
        dockerd = processes("dockerd")
        before = [_run_ns(shims), _run_ns(containerd), _run_ns(dockerd)]
        time.sleep(args.window)
        after = [_run_ns(shims), _run_ns(containerd), _run_ns(dockerd)]
        per_s = [(a - b) / args.window / 1e6 for a, b in zip(after, before, strict=True)]
        per_shim = per_s[0] / max(1, len(shims))
        emit(
            {
                "containers": len(ids),
                "shims": len(shims),
                "window_s": args.window,
                "shim_cpu_ms_per_s_each": round(per_shim, 3),
                "shim_pss_mb_each": round(sum(pss_kb(p) for p in shims) / 1024 / max(1, len(shims)), 2),
                # containerd and dockerd serve every container of the engine, these and any other.
                "containerd_cpu_ms_per_s": round(per_s[1], 2),
                "dockerd_cpu_ms_per_s": round(per_s[2], 2),
                "shims_share_of_machine_at_1000_pct": round(per_shim * 1000 / (os.cpu_count() or 1) / 10, 1),
            }
        )
    finally:
        for box in client.containers.list(all=True, filters={"label": f"{LABEL}={run}"}):
            box.remove(force=True)


if __name__ == "__main__":
    main()
