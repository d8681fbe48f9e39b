"""What this host's service reports with each heartbeat (the registry, docs/scale-out.md): its size, what
is free now and what runs, and what each org has written here (the org disk budgets count every host:
sandbox.budget). Cheap enough for every ~10 s: two small /proc reads, one statvfs, one Docker call (the
census's container list), a registry lookup per running sandbox and the budget's tally (a stat of the
mounted images, the registry's org index, the repositories' sizes)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import docker

from sandbox import budget, containers, registry, volumes

MB = 1024 * 1024


@dataclass(frozen=True)
class HostStats:
    cpus: float
    memory_mb: int
    free_memory_mb: int
    disk_mb: int  # the sandbox root's filesystem
    free_disk_mb: int
    live_sessions: list[str] = field(default_factory=list)  # sessions whose sandbox runs here
    org_live: dict[str, int] = field(default_factory=dict)  # live sandboxes per org
    org_written_mb: dict[str, float] = field(default_factory=dict)  # written here per org (workspaces, repos)


def memory_mb(meminfo: Path = Path("/proc/meminfo")) -> tuple[int, int]:
    """(total, available) MB: MemAvailable is what the kernel could give without swapping."""
    values: dict[str, int] = {}
    for line in meminfo.read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable"):
            values[key] = int(rest.split()[0]) // 1024  # kB
    return values.get("MemTotal", 0), values.get("MemAvailable", 0)


def disk_mb(root: Path | None = None) -> tuple[int, int]:
    """(size, free for an unprivileged writer) MB of the sandbox root's filesystem (budget.py's free)."""
    root = root or volumes.ROOT
    root.mkdir(parents=True, exist_ok=True)
    fs = os.statvfs(root)
    return fs.f_blocks * fs.f_frsize // MB, fs.f_bavail * fs.f_frsize // MB


def live_sandboxes(api: docker.APIClient) -> tuple[list[str], dict[str, int]]:
    """The sessions whose sandbox runs on this host (this sandbox root's: a container of another root has
    no record here), and how many per org. Warm-pool containers are nobody's yet."""
    sessions: list[str] = []
    orgs: Counter[str] = Counter()
    for c in api.containers(filters={"name": containers.SESSION_PREFIX, "status": "running"}):
        name = c["Names"][0].lstrip("/")
        if not name.startswith(containers.SESSION_PREFIX):
            continue
        record = registry.lookup(name[len(containers.SESSION_PREFIX) :])
        if record:
            sessions.append(record["session_id"])
            orgs[str(record.get("org_id") or "")] += 1
    orgs.pop("", None)
    return sessions, dict(orgs)


def collect(api: docker.APIClient) -> HostStats:
    total_mem, free_mem = memory_mb()
    total_disk, free_disk = disk_mb()
    sessions, orgs = live_sandboxes(api)
    written = {org: round(mb, 1) for org, mb in budget.OrgTally.now().by_org().items() if org and mb > 0}
    return HostStats(
        float(os.cpu_count() or 1), total_mem, free_mem, total_disk, free_disk, sessions, orgs, written
    )
