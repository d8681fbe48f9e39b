"""Disk budgets for workspace volumes: a quota is reserved before its sparse image exists.

A volume's image is sparse, so its quota is a promise, not space: promised too often, the host's disk fills
while every sandbox is still under its quota. A new volume is therefore refused (QuotaExceeded) when
  * global: the quotas of all volumes plus the new one exceed HANGAR_SANDBOX_DISK_BUDGET_MB (unset: no
    fixed cap), or the space the existing volumes may still take (quota minus blocks already written)
    plus the new quota exceeds the filesystem's real free space minus HANGAR_SANDBOX_DISK_HEADROOM_MB;
  * per org: the quotas of the org's registered volumes plus the new one exceed its budget
    (HANGAR_SANDBOX_ORG_DISK_BUDGET_MB, or what the caller passes).
Checks and the reservation (creating the image file) happen under one host-wide lock, so two creates
cannot both take the last room. Unclaimed warm-pool volumes count globally, and towards an org once
claimed. Repositories (mirrors and checkout layers, sandbox.repo_disk) are a term of their own, added to
the global and org sums: they live outside every volume. `repo_room_bytes` is what the next clone or
fetch may write.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import overload

from sandbox import repo_disk, volumes
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

    @classmethod
    def from_env(cls) -> Limits:
        return cls(
            global_mb=_env_mb("HANGAR_SANDBOX_DISK_BUDGET_MB", None),
            headroom_mb=_env_mb("HANGAR_SANDBOX_DISK_HEADROOM_MB", DEFAULT_HEADROOM_MB),
            org_mb=_env_mb("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", DEFAULT_ORG_BUDGET_MB),
        )


@dataclass(frozen=True)
class Usage:
    reserved_mb: float  # sum of all quotas
    written_mb: float  # blocks the images hold now
    free_mb: float  # real free space of the sandbox root's filesystem
    volumes: int

    @property
    def committed_mb(self) -> float:
        """What the volumes may still take from the disk if every one fills to its quota."""
        return self.reserved_mb - self.written_mb


def usage() -> Usage:
    images = volumes.ROOT / "volumes"
    reserved = written = 0
    count = 0
    if images.exists():
        for path in images.glob("*.img"):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # destroyed meanwhile
            reserved += st.st_size
            written += min(st.st_blocks * 512, st.st_size)
            count += 1
    volumes.ROOT.mkdir(parents=True, exist_ok=True)
    fs = os.statvfs(volumes.ROOT)
    return Usage(reserved / MB, written / MB, fs.f_bavail * fs.f_frsize / MB, count)


def org_reserved_mb(org_id: str) -> float:
    """The quotas of the org's registered volumes (records name the org and the volume)."""
    total = 0
    for key in volumes.registered_keys():
        record = volumes.lookup(key)
        if record and record.get("org_id") == org_id:
            try:
                total += (volumes.ROOT / "volumes" / f"{record['volume']}.img").stat().st_size
            except (FileNotFoundError, KeyError):
                pass
    return total / MB


@contextmanager
def reserving() -> Iterator[None]:
    """Hold the host-wide budget lock while checking and creating a volume."""
    lock = volumes.ROOT / "locks" / "budget.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def check(size_mb: int, *, org_id: str = "", limits: Limits | None = None) -> None:
    """Raise QuotaExceeded if a new `size_mb` volume (for `org_id`, if any) would overcommit. Call under
    `reserving()`, with the volume's creation in the same block."""
    limits = limits or Limits.from_env()
    now = usage()
    repos = repo_disk.used_mb() if limits.global_mb is not None else 0.0
    if limits.global_mb is not None and now.reserved_mb + repos + size_mb > limits.global_mb:
        raise QuotaExceeded(
            f"sandbox disk budget exhausted: {now.reserved_mb + repos:.0f} MB of {limits.global_mb} MB "
            f"reserved ({repos:.0f} MB by repositories), a new workspace asks {size_mb} MB"
        )
    room = now.free_mb - limits.headroom_mb - now.committed_mb
    if size_mb > room:
        raise QuotaExceeded(
            f"sandbox disk full: {now.free_mb:.0f} MB free, {now.committed_mb:.0f} MB promised to existing "
            f"workspaces, {limits.headroom_mb} MB kept free; a new workspace asks {size_mb} MB"
        )
    if org_id:
        check_org(size_mb, org_id, limits)


def check_org(size_mb: int, org_id: str, limits: Limits | None = None) -> None:
    """The org's part of `check` alone: for a claimed warm-pool volume, already reserved globally."""
    limits = limits or Limits.from_env()
    repos = repo_disk.used_mb(org_id)
    mine = org_reserved_mb(org_id) + repos
    if mine + size_mb > limits.org_mb:
        raise QuotaExceeded(
            f"organisation sandbox disk budget exhausted: {mine:.0f} MB of {limits.org_mb} MB reserved "
            f"({repos:.0f} MB by repositories), a new workspace asks {size_mb} MB"
        )


def repo_room_bytes(org_id: str = "", limits: Limits | None = None) -> int:
    """What the next clone, fetch or layer for `org_id` may write: the least of the repository cap
    (HANGAR_REPO_MAX_MB), the room left in the org's budget and the global one, and the real free space
    not promised to workspaces. Zero or less: no room."""
    limits = limits or Limits.from_env()
    now = usage()
    rooms = [repo_disk.max_fetch_bytes(), int((now.free_mb - limits.headroom_mb - now.committed_mb) * MB)]
    if limits.global_mb is not None:
        rooms.append(int((limits.global_mb - now.reserved_mb - repo_disk.used_mb()) * MB))
    if org_id:
        rooms.append(int((limits.org_mb - org_reserved_mb(org_id) - repo_disk.used_mb(org_id)) * MB))
    return min(rooms)
