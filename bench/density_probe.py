"""What a live session costs the machine, read where it does not depend on the CPU's load: the worker's
threads, file descriptors and memory, Postgres and Redis connections, the container runtime's processes
(containerd-shim per container, dockerd, containerd), and how long the platform's sweeps over every
sandbox take. bench/density.py reads these with every sandbox made but idle (`Probe.idle`) and again while
every session waits on its model (`Probe.waiting`); the difference divided by the sessions is the cost of
one waiting session.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from common import BENCH_DB, rss_mb


def _status(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def processes(prefix: str) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            comm = Path(f"/proc/{name}/comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith(prefix):
            pids.append(int(name))
    return pids


def _pg_connections() -> int:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [BENCH_DB]).fetchone()
    return int(row[0]) if row else 0


def _redis_clients() -> int:
    """Clients connected to this run's Redis database (REDIS_URL's number; Pub/Sub ones count too)."""
    import re

    import redis

    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    db = int(m.group(1)) if (m := re.search(r"/(\d+)$", url)) else 0
    client = redis.Redis.from_url(url)
    try:
        return sum(1 for c in client.client_list() if int(c.get("db", -1)) == db)
    finally:
        client.close()


def pss_kb(pid: int) -> int:
    """Proportional set size: a shim's binary pages are shared by every shim, RSS would count them each time."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def shims_of(container_ids: set[str]) -> list[int]:
    """The containerd-shim processes serving these containers (`-id <container id>` on their command line);
    other people's containers on a shared machine have shims too."""
    out = []
    for pid in processes("containerd-shim"):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        at = args.index(b"-id") + 1 if b"-id" in args else len(args)
        if at < len(args) and args[at].decode() in container_ids:
            out.append(pid)
    return out


def snapshot(worker_pids: list[int], container_ids: set[str]) -> dict[str, float]:
    shims = shims_of(container_ids)
    dockerd = processes("dockerd")
    containerd = [
        p
        for p in processes("containerd")
        if not Path(f"/proc/{p}/comm").read_text().startswith("containerd-shim")
    ]
    return {
        "worker_threads": sum(_status(p, "Threads") for p in worker_pids),
        "worker_fds": sum(_fds(p) for p in worker_pids),
        "worker_rss_mb": sum(rss_mb(p) for p in worker_pids),
        "pg_connections": _pg_connections(),
        "redis_clients": _redis_clients(),
        "shims": len(shims),
        "shim_pss_mb": sum(pss_kb(p) for p in shims) / 1024,
        "dockerd_rss_mb": sum(_status(p, "VmRSS") for p in dockerd) / 1024,
        "dockerd_fds": sum(_fds(p) for p in dockerd),
        "containerd_rss_mb": sum(_status(p, "VmRSS") for p in containerd) / 1024,
    }


def per_session(idle: dict[str, float], waiting: dict[str, float], n: int) -> dict[str, float]:
    """Each figure's growth from idle sandboxes to waiting sessions, per session; and the shim's
    memory per container (shims exist with the containers, before any prompt)."""
    out = {f"{k}_per_waiting_session": round((waiting[k] - idle[k]) / max(1, n), 3) for k in idle}
    out["shim_pss_mb_per_container"] = round(waiting["shim_pss_mb"] / max(1, waiting["shims"]), 2)
    return out


def sweep_times() -> dict[str, float]:
    """Wall time of the platform's periodic sweep (the reaper, as beat runs it) and of one disk budget
    check (what every new sandbox pays under the host-wide lock), over whatever sandboxes the host has."""
    from hangar.engine.workspace.reaping import reap
    from sandbox import budget

    started = time.perf_counter()
    report = reap()
    reap_s = time.perf_counter() - started
    started = time.perf_counter()
    with budget.reserving():
        budget.check(2048, org_id="density-probe")
    check_s = time.perf_counter() - started
    return {
        "reaper_sweep_s": round(reap_s, 3),
        "reaper_errors": len(report.get("errors") or []),
        "budget_check_ms": round(check_s * 1000, 2),
    }


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages (2 cores here, shared with other work)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
