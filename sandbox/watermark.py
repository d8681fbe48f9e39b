"""Thin provisioning's other half: stop the writing before the disk is full, never corrupt a workspace.

Quotas are not held (sandbox.budget), so running workspaces may together fill the disk. `sweep` (every few
seconds, `hangar.engine.sandbox_watermark`) looks at each line budget.pressure knows: the host's high
watermark (HANGAR_SANDBOX_DISK_HEADROOM_MB of real free space) and budget, and each org's budget (what it
wrote here and on the other sandbox hosts, when the engine hands that in). Behind a
crossed line it pauses the heaviest writer (the live workspace holding the most blocks) of that scope:
`docker pause` freezes its processes where they stand, so no file is cut short and nothing is lost, and a
marker beside its registry record makes every call to it fail at once with the reason (SandboxPaused)
instead of hanging on a frozen agent. Another one is paused only if the scope still grows. New workspaces
are refused meanwhile (budget.check); other orgs' sessions keep working. When the line is no longer crossed
(space freed, a budget raised), the sweep unpauses what it paused; hibernate and destroy unpause first.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import docker.errors

from sandbox import budget, containers, registry, volumes

if TYPE_CHECKING:
    from sandbox.manager import DockerSandboxes

HOST = "host"


@dataclass
class WatermarkReport:
    paused: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    pressure: dict[str, str] = field(default_factory=dict)  # scope -> reason


@dataclass
class _Live:
    key: str
    session_id: str
    org_id: str
    written_mb: float


def _live() -> list[_Live]:
    """Workspaces whose volume is mounted (a hibernated one is not, and writes nothing). Only their records
    are read: ten thousand hibernated sessions were ten thousand reads per sweep."""
    out = []
    try:
        mounted = set(os.listdir(volumes.ROOT / "mnt"))  # a mount point exists while its volume is mounted
    except FileNotFoundError:
        mounted = set()
    for key, _org, volume in registry.volume_owners():
        if volume not in mounted:
            continue
        record = registry.lookup(key)
        if (
            not record
            or not record.get("volume")
            or not os.path.ismount(volumes.mount_point(record["volume"]))
        ):
            continue
        written = budget.volume_written_mb(record["volume"])
        out.append(_Live(key, record["session_id"], record.get("org_id") or "", written))
    return out


def _state_path() -> Any:
    return volumes.ROOT / "locks" / "watermark.json"


def _load_state() -> dict[str, float]:
    try:
        data = json.loads(_state_path().read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (FileNotFoundError, ValueError, AttributeError):
        return {}


def _save_state(state: dict[str, float]) -> None:
    path = _state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name per process and thread: the threaded worker may save from two threads at once.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def pause(manager: DockerSandboxes, live: _Live, scope: str, reason: str) -> bool:
    """Mark, then freeze: a call made meanwhile fails with the reason rather than waiting on the agent."""
    registry.mark_paused(live.key, scope, reason)
    try:
        manager.api.pause(containers.session_container_name(live.session_id))
        return True
    except docker.errors.APIError:  # gone or not running (hibernated meanwhile): nothing writes
        registry.clear_paused(live.key)
        return False


def resume(manager: DockerSandboxes, key: str, session_id: str) -> None:
    try:
        manager.api.unpause(containers.session_container_name(session_id))
    except docker.errors.APIError:
        pass  # not paused (any more), or gone
    registry.clear_paused(key)


def sweep(
    manager: DockerSandboxes,
    limits: budget.Limits | None = None,
    elsewhere: Mapping[str, float] | None = None,
) -> WatermarkReport:
    """One pass over the lines. `elsewhere`: MB by org written on the other sandbox hosts (their
    heartbeats), counted in each org's line: an org over its budget across hosts has its heaviest writer
    *here* paused (each host pauses its own; the others' bytes are as of their last heartbeat). The
    host's line is this disk's, and growth is judged by this host's writers: only they can be paused."""
    limits = limits or budget.Limits.from_env()
    report = WatermarkReport()
    live = _live()
    used = {HOST: sum(w.written_mb for w in live)}
    host = budget.host_pressure(budget.usage(), limits)
    if host:
        report.pressure[HOST] = host
    tally = budget.OrgTally.now(elsewhere)
    for org in {w.org_id for w in live if w.org_id}:
        used[f"org:{org}"] = sum(w.written_mb for w in live if w.org_id == org)
        reason = budget.org_pressure(org, limits, tally)
        if reason:
            report.pressure[f"org:{org}"] = reason
    paused = {w.key: registry.paused_scope(w.key) for w in live}
    for w in live:  # the line behind which a sandbox was paused is no longer crossed: let it write again
        scope = paused[w.key]
        if scope and scope not in report.pressure:
            resume(manager, w.key, w.session_id)
            paused[w.key] = None
            report.resumed.append(w.session_id)
    before = _load_state()
    for scope, reason in report.pressure.items():
        members = [w for w in live if scope == HOST or f"org:{w.org_id}" == scope]
        already = [w for w in members if paused[w.key]]
        if already and used.get(scope, 0.0) <= before.get(scope, 0.0):
            continue  # its heaviest writer is paused and it no longer grows
        for w in sorted((w for w in members if not paused[w.key]), key=lambda w: -w.written_mb):
            if pause(manager, w, scope, reason):
                paused[w.key] = scope
                report.paused.append(w.session_id)
                break
    _save_state(used)
    return report
