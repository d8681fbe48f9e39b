"""Disk budgets for workspace volumes, thin provisioned: what is written counts, not the quota.

A volume's image is sparse: its quota is a cap on one workspace, not space taken from the host, so promising
every quota in full capped a host at a few dozen workspaces, live or not. The budgets count the blocks the
images hold (a hibernated workspace is compacted: `volumes.compact`) plus what repositories take
(sandbox.repo_disk: mirrors and checkout layers live outside every volume). A new volume is refused
(QuotaExceeded) when
  * global: written bytes exceed HANGAR_SANDBOX_DISK_BUDGET_MB (unset: no fixed cap), or the filesystem's
    real free space is below HANGAR_SANDBOX_DISK_HEADROOM_MB: the high watermark;
  * per org: the org's written bytes exceed its budget (HANGAR_SANDBOX_ORG_DISK_BUDGET_MB, or the caller's),
    on this host and on the other sandbox hosts (`elsewhere`: what their heartbeats reported, per org,
    handed in by the engine, which reads the host registry);
  * per person: the written bytes of all the orgs one owner of the org owns exceed
    HANGAR_SANDBOX_USER_DISK_BUDGET_MB (the spec's `disk_groups`, one per owner: anyone may create orgs,
    and five orgs of one account must not get five org budgets; 0 turns it off).
Since quotas are not held, running workspaces can still fill the disk: `pressure` says which line is
crossed now (the host's watermark or budget, an org's budget) and `sandbox.watermark` pauses the heaviest
writer behind it. Checks and the creation of the image file happen under one host-wide lock. Unclaimed
warm-pool volumes count globally, and towards an org once claimed. `repo_room_bytes` is what the next
clone or fetch may write. Wherever the line is an org's (or an owner's), what it wrote on the other hosts
counts when the caller hands it in (`elsewhere`): a new workspace, an import, the watermark's pause, a
clone's room; the host's own lines (its watermark, its budget) are this disk's alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

from sandbox import host_locks, registry, repo_disk, volumes, written
from sandbox.protocol import QuotaExceeded

MB = 1024 * 1024
DEFAULT_HEADROOM_MB = 2048
DEFAULT_ORG_BUDGET_MB = 50 * 1024


@overload
def _env_mb(name: str, default: int) -> int: ...
@overload
def _env_mb(name: str, default: None) -> int | None: ...
def _env_mb(name: str, default: int | None) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


@dataclass(frozen=True)
class Limits:
    global_mb: int | None = None  # None: only the free-space rule
    headroom_mb: int = DEFAULT_HEADROOM_MB
    org_mb: int = DEFAULT_ORG_BUDGET_MB
    owner_mb: int = DEFAULT_ORG_BUDGET_MB  # one owner's orgs together; 0: no such budget

    @classmethod
    def from_env(cls) -> Limits:
        return cls(
            global_mb=_env_mb("HANGAR_SANDBOX_DISK_BUDGET_MB", None),
            headroom_mb=_env_mb("HANGAR_SANDBOX_DISK_HEADROOM_MB", DEFAULT_HEADROOM_MB),
            org_mb=_env_mb("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", DEFAULT_ORG_BUDGET_MB),
            owner_mb=_env_mb("HANGAR_SANDBOX_USER_DISK_BUDGET_MB", DEFAULT_ORG_BUDGET_MB),
        )


@dataclass(frozen=True)
class Usage:
    reserved_mb: float  # sum of all quotas: what the workspaces may grow to (not held: thin provisioning)
    written_mb: float  # blocks the images hold now
    free_mb: float  # real free space of the sandbox root's filesystem
    volumes: int


def _written(path: Path) -> tuple[int, int]:
    """(quota, written) bytes of a volume image; (0, 0) if it is gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return 0, 0  # destroyed meanwhile
    return st.st_size, min(st.st_blocks * 512, st.st_size)


def usage() -> Usage:
    images = written.images()  # a stat of the mounted images only (sandbox.written)
    reserved = sum(quota for quota, _ in images.values())
    blocks = sum(held for _, held in images.values())
    volumes.ROOT.mkdir(parents=True, exist_ok=True)
    fs = os.statvfs(volumes.ROOT)
    return Usage(reserved / MB, blocks / MB, fs.f_bavail * fs.f_frsize / MB, len(images))


def volume_written_mb(volume_id: str) -> float:
    return _written(volumes.ROOT / "volumes" / f"{volume_id}.img")[1] / MB


@dataclass(frozen=True)
class OrgTally:
    """What each org's workspaces and repositories hold, in MB: one pass over the registry and the
    repositories, shared by every budget one check or sweep judges (an org's, each of its owners')."""

    volumes_mb: dict[str, float]
    repos_mb: dict[str, float]
    elsewhere_mb: Mapping[str, float] = field(default_factory=dict)  # written on other hosts, by org

    @classmethod
    def now(cls, elsewhere: Mapping[str, float] | None = None) -> OrgTally:
        images = written.images()
        by_org: dict[str, float] = {}
        for org, volume in registry.org_volumes():
            if volume in images:
                by_org[org] = by_org.get(org, 0.0) + images[volume][1] / MB
        repos = {org: used / MB for org, used in repo_disk.bytes_by_org().items() if org}
        return cls(by_org, repos, dict(elsewhere or {}))

    def by_org(self) -> dict[str, float]:
        """This host's written MB per org, workspaces and repositories: what its heartbeat reports."""
        out = dict(self.volumes_mb)
        for org, used in self.repos_mb.items():
            out[org] = out.get(org, 0.0) + used
        return out

    def repos(self, orgs: Sequence[str]) -> float:
        return sum(self.repos_mb.get(org, 0.0) for org in orgs)

    def elsewhere(self, orgs: Sequence[str]) -> float:
        return sum(float(self.elsewhere_mb.get(org, 0.0)) for org in orgs)

    def total(self, orgs: Sequence[str]) -> float:
        here = sum(self.volumes_mb.get(org, 0.0) for org in orgs) + self.repos(orgs)
        return here + self.elsewhere(orgs)


def org_written_mb(org_id: str) -> float:
    """What the org's registered volumes hold (records name the org and the volume)."""
    return OrgTally.now().volumes_mb.get(org_id, 0.0)


@contextmanager
def reserving() -> Iterator[None]:
    """Hold the host-wide budget lock while checking and creating a volume."""
    with host_locks.held("budget.lock"):
        yield


Groups = Sequence[Sequence[str]]  # org ids whose bytes count together: one group per owner of the org


def check(
    size_mb: int,
    *,
    org_id: str = "",
    limits: Limits | None = None,
    groups: Groups = (),
    elsewhere: Mapping[str, float] | None = None,
) -> None:
    """Raise QuotaExceeded if no new workspace (of quota `size_mb`, for `org_id` if any) may start now: the
    host is at its high watermark or over its budget, or the org over its own (`elsewhere`: MB by org on
    other hosts, counted too). Call under `reserving()`, with the volume's creation in the same block."""
    limits = limits or Limits.from_env()
    reason = host_pressure(usage(), limits)
    if reason:
        raise QuotaExceeded(f"{reason}; a new workspace (quota {size_mb} MB) cannot start")
    if org_id:
        check_org(size_mb, org_id, limits, groups, elsewhere=elsewhere)


def check_org(
    size_mb: int,
    org_id: str,
    limits: Limits | None = None,
    groups: Groups = (),
    *,
    elsewhere: Mapping[str, float] | None = None,
) -> None:
    """The org's (and its owners') part of `check` alone: for a claimed warm-pool volume, already counted
    globally."""
    limits = limits or Limits.from_env()
    tally = OrgTally.now(elsewhere)
    reason = org_pressure(org_id, limits, tally) or owner_pressure(groups, limits, tally)
    if reason:
        raise QuotaExceeded(f"{reason}; a new workspace (quota {size_mb} MB) cannot start")


def host_pressure(now: Usage, limits: Limits) -> str:
    """Why the host takes no more writing now ("" if it does): its high watermark or its budget."""
    if now.free_mb < limits.headroom_mb:
        return (
            f"sandbox disk at its high watermark: {now.free_mb:.0f} MB free, {limits.headroom_mb} MB kept free "
            f"({now.written_mb:.0f} MB written by {now.volumes} workspaces)"
        )
    if limits.global_mb is not None:
        repos = repo_disk.used_mb()
        if now.written_mb + repos >= limits.global_mb:
            return (
                f"sandbox disk budget exhausted: {now.written_mb + repos:.0f} MB of {limits.global_mb} MB "
                f"written ({repos:.0f} MB by repositories)"
            )
    return ""


def org_pressure(org_id: str, limits: Limits, tally: OrgTally | None = None) -> str:
    """Why the org may write no more now ("" if it may)."""
    tally = tally or OrgTally.now()
    repos, mine = tally.repos([org_id]), tally.total([org_id])
    if mine >= limits.org_mb:
        return (
            f"organisation sandbox disk budget exhausted: {mine:.0f} MB of {limits.org_mb} MB written "
            f"({repos:.0f} MB by repositories{_on_other_hosts(tally, [org_id])})"
        )
    return ""


def owner_pressure(groups: Groups, limits: Limits, tally: OrgTally | None = None) -> str:
    """Why an owner of the org may write no more now, across the orgs they own ("" if every one may)."""
    if limits.owner_mb <= 0 or not groups:
        return ""
    tally = tally or OrgTally.now()
    for orgs in groups:
        repos, theirs = tally.repos(orgs), tally.total(orgs)
        if theirs >= limits.owner_mb:
            return (
                f"sandbox disk budget of this organisation's owner exhausted: {theirs:.0f} MB of "
                f"{limits.owner_mb} MB written by the {len(orgs)} orgs they own ({repos:.0f} MB by repositories"
                f"{_on_other_hosts(tally, orgs)})"
            )
    return ""


def _on_other_hosts(tally: OrgTally, orgs: Sequence[str]) -> str:
    there = tally.elsewhere(orgs)
    return f", {there:.0f} MB on other sandbox hosts" if there > 0 else ""


def repo_room_bytes(
    org_id: str = "", limits: Limits | None = None, elsewhere: Mapping[str, float] | None = None
) -> int:
    """What the next clone, fetch or layer for `org_id` may write: the least of the repository cap
    (HANGAR_REPO_MAX_MB), the room left in the org's budget (what it wrote here and, `elsewhere`, on the
    other sandbox hosts) and the global one, and the real free space above the high watermark. Zero or
    less: no room."""
    limits = limits or Limits.from_env()
    now = usage()
    rooms = [repo_disk.max_fetch_bytes(), int((now.free_mb - limits.headroom_mb) * MB)]
    if limits.global_mb is not None:
        rooms.append(int((limits.global_mb - now.written_mb - repo_disk.used_mb()) * MB))
    if org_id:
        there = float((elsewhere or {}).get(org_id, 0.0))
        rooms.append(int((limits.org_mb - org_written_mb(org_id) - repo_disk.used_mb(org_id) - there) * MB))
    return min(rooms)
