"""Periodic checkpoints of live workspaces: what a session resumes from when its host is lost
(docs/scale-out.md, "Host loss"). Without them only a drain exported a workspace, so a session never
drained lost everything it wrote on a host that died.

`sweep` (the host's periodic sweep, hangar.engine.workspace.checkpoints) copies each live workspace that
changed since its last checkpoint, at most once per interval (and once its session's run is over, at the
next sweep, at most once a minute: the end of a run is checkpointed), into the archive (HANGAR_WORKSPACE_ARCHIVE)
as the session's checkpoint: `<key>.checkpoint.tar.zst` and `.json`, the format of an export, so what
`workspace_archive.restore_checkpoint` and `import_` restore; the next one replaces it.

- Changed since: ext4 counts every byte written to a filesystem (`lifetime_write_kbytes` in sysfs, kept
  in the superblock across mounts). Comparing it with its value at the last checkpoint is one read per
  live workspace, no walk of its files. A write still in the page cache is counted once the kernel writes
  it back, so it is seen by a later sweep, never missed. A remount writes a few blocks: a resumed
  workspace gets one checkpoint more.
- Consistent while the sandbox writes: the copy is a tar of the live tree (workspace as the sandbox sees
  it, state with its snapshot repository), bracketed by two syncfs and two reads of that counter. Equal
  counters mean no block was written between the first flush and the second, which flushed whatever was
  written during the copy: the tar is the filesystem as it was at one instant. Otherwise it is thrown
  away and the workspace is tried again at the next sweep (a workspace written without pause for a
  whole interval gets none meanwhile). Nothing pauses the sandbox: a step never waits on a checkpoint.
  tar reads with O_NOATIME, so the copy itself writes nothing. The filesystem is held open for the
  copy: a hibernate meanwhile detaches its mount lazily (a resume then mounts the same superblock again,
  through the same loop device), and a copy whose workspace left this host (destroyed, exported) is not
  published.
- Bounded: one sweep at a time per host (a flock), one workspace at a time, none while the host's disk
  is at its watermark. A repository clone is not checkpointed (its branch is its checkpoint).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import budget, gitops, host_locks, registry, volumes, workspace_archive
from sandbox.protocol import SandboxError

SWEEP_LOCK = "host-checkpoint.lock"  # one sweep at a time per host (host_locks)

_libc = ctypes.CDLL(None, use_errno=True)
TAR_TIMEOUT_S = 1800
# A settled workspace (its session's run over) that changed is checkpointed at the next sweep, but not
# more often than this: a sandbox's own background process writing while nobody prompts costs at most one
# copy a minute.
SETTLED_GAP_S = 60.0


@dataclass
class Live:
    key: str
    volume: str
    written_kb: int


@dataclass
class SweepReport:
    made: list[str] = field(default_factory=list)  # session ids checkpointed
    written_during: list[str] = field(default_factory=list)  # copies thrown away: written meanwhile
    failed: list[str] = field(default_factory=list)
    unchanged: int = 0
    not_due: int = 0
    skipped: str = ""  # why nothing was looked at


def written_kb(mount_fd: int) -> int:
    """KiB written to the ext4 filesystem open at `mount_fd` since it was made (its superblock's count)."""
    dev = os.fstat(mount_fd).st_dev
    name = os.path.basename(os.readlink(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
    return int(Path(f"/sys/fs/ext4/{name}/lifetime_write_kbytes").read_text())


def _syncfs(fd: int) -> None:
    if _libc.syncfs(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"syncfs: {os.strerror(errno)}")


@contextlib.contextmanager
def _opened_mount(volume_id: str) -> Iterator[int | None]:
    """The volume's mounted filesystem, held open (None when it is not mounted: hibernated)."""
    mnt = volumes.mount_point(volume_id)
    try:
        fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    try:  # a mount point's own device differs from its parent directory's
        yield fd if os.fstat(fd).st_dev != os.stat(mnt.parent).st_dev else None
    finally:
        os.close(fd)


def _state_path() -> Path:
    return volumes.ROOT / "locks" / "checkpoints.json"


def load_state() -> dict[str, dict[str, Any]]:
    """key -> {volume, written_kb, at}: each workspace's last checkpoint on this host."""
    try:
        data = json.loads(_state_path().read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_state(state: dict[str, dict[str, Any]]) -> None:
    path = _state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def live_workspaces(owners: list[tuple[str, str, str]] | None = None) -> list[Live]:
    """Registered workspaces whose volume is mounted (a hibernated one writes nothing), with their count."""
    try:
        mounted = set(os.listdir(volumes.ROOT / "mnt"))  # a mount point exists while its volume is mounted
    except FileNotFoundError:
        return []
    out = []
    for key, _org, volume in registry.volume_owners() if owners is None else owners:
        if volume not in mounted:
            continue
        with _opened_mount(volume) as fd:
            if fd is None:
                continue
            try:
                out.append(Live(key, volume, written_kb(fd)))
            except (OSError, ValueError):
                continue  # not ext4, or unmounted meanwhile
    return out


def due(
    live: Iterable[Live],
    state: dict[str, dict[str, Any]],
    interval_s: float,
    now: float,
    settled: frozenset[str] = frozenset(),
) -> tuple[list[Live], int, int]:
    """Which live workspaces to checkpoint now: changed since their last checkpoint (another volume
    counts as changed: its count starts anew) and not checkpointed within `interval_s`, or within
    SETTLED_GAP_S for one in `settled` (keys whose session's run has ended: what the run wrote is
    checkpointed once the run is over, not up to an interval later); the longest waiting first. Returns
    (them, how many unchanged, how many not due yet)."""
    chosen: list[tuple[float, Live]] = []
    unchanged = not_due = 0
    for w in live:
        last = state.get(w.key) or {}
        gap = min(interval_s, SETTLED_GAP_S) if w.key in settled else interval_s
        if not changed(w, state):
            unchanged += 1
        elif now - float(last.get("at", 0)) < gap:
            not_due += 1
        else:
            chosen.append((float(last.get("at", 0)), w))
    return [w for _, w in sorted(chosen, key=lambda c: c[0])], unchanged, not_due


def changed(w: Live, state: dict[str, dict[str, Any]]) -> bool:
    """Written since its last checkpoint (another volume counts as changed: its count starts anew)."""
    last = state.get(w.key) or {}
    return last.get("volume") != w.volume or int(last.get("written_kb", -1)) != w.written_kb


class WrittenDuring(Exception):
    """The workspace was written while it was copied: the copy is not of one instant."""


def checkpoint(session_id: str, key: str, volume: str) -> dict[str, Any]:
    """Copy the live workspace into the archive as the session's checkpoint (replacing the last one).
    Returns {written_kb, at, bytes}. WrittenDuring when the copy is not of one instant; SandboxError
    when tar fails; NotMovable when the workspace is not this host's to checkpoint any more."""
    tree, mark = workspace_archive.checkpoint_paths(session_id)
    tree.parent.mkdir(parents=True, exist_ok=True)
    tmp = tree.with_name(f".{tree.name}.{uuid.uuid4().hex[:8]}")
    try:
        with _opened_mount(volume) as fd:
            if fd is None:
                raise workspace_archive.NotMovable(f"session {session_id}'s workspace is not mounted")
            _syncfs(fd)
            before, at = written_kb(fd), time.time()
            where = ["-C", f"/proc/self/fd/{fd}", "workspace", "state"]  # the filesystem held open
            proc = subprocess.run(
                [*workspace_archive.TAR, "--atime-preserve=system", "-cf", str(tmp), *where],
                capture_output=True,
                pass_fds=(fd,),
                timeout=TAR_TIMEOUT_S,
            )
            _syncfs(fd)
            if written_kb(fd) != before or proc.returncode == 1:  # 1: a file changed as tar read it
                raise WrittenDuring(f"session {session_id}'s workspace was written during its copy")
            if proc.returncode != 0:
                raise SandboxError(
                    f"checkpoint of {session_id}'s workspace failed: {proc.stderr.decode()[-500:]}"
                )
        with workspace_archive.checkpoint_lock(session_id):
            record = registry.lookup(key)
            if not record or record.get("volume") != volume:
                raise workspace_archive.NotMovable(f"session {session_id}'s workspace left this host")
            size = tmp.stat().st_size
            meta = workspace_archive.mark_of(record, session_id, exported_at=at, size=size)
            os.replace(tmp, tree)  # the tree first: a mark never names a tree older than itself
            workspace_archive.write_atomically(mark, json.dumps(meta | {"checkpoint": True}))
        return {"written_kb": before, "at": at, "bytes": size}
    finally:
        tmp.unlink(missing_ok=True)


def sweep(
    interval_s: float,
    *,
    ours: Callable[[list[str]], set[str]] = set,
    settled: Callable[[list[str]], set[str]] = set,
    limits: budget.Limits | None = None,
    now: float | None = None,
) -> SweepReport:
    """Checkpoint this host's live workspaces that are due (`due`), one after another. `ours` says which
    of the sessions are this host's in the platform's view (a host thought lost may still run: it must
    not replace the checkpoint of a session resumed elsewhere); `settled`, which of them no run holds
    now (their last run's writes are due at once)."""
    report = SweepReport()
    if interval_s <= 0 or workspace_archive.archive_dir() is None:
        report.skipped = "checkpoints are off"
        return report
    with host_locks.held_if_free(SWEEP_LOCK) as mine:
        if not mine:
            report.skipped = "another checkpoint sweep runs on this host"
            return report
        pressure = budget.host_pressure(budget.usage(), limits or budget.Limits.from_env())
        if pressure:
            report.skipped = pressure
            return report
        owners = registry.volume_owners()
        live = live_workspaces(owners)
        registered = {key for key, _org, _volume in owners}  # a hibernated workspace keeps its entry
        state = {k: v for k, v in load_state().items() if k in registered}
        at = time.time() if now is None else now
        # Only what changed can be due: an unchanged workspace costs no registry read and no query.
        sessions = {
            w.key: (registry.lookup(w.key) or {}).get("session_id") or "" for w in live if changed(w, state)
        }
        quiet = settled([s for s in sessions.values() if s]) if sessions else set()
        settled_keys = frozenset(key for key, session_id in sessions.items() if session_id in quiet)
        chosen, report.unchanged, report.not_due = due(live, state, interval_s, at, settled_keys)
        mine_now = ours([sessions[w.key] for w in chosen if sessions[w.key]])
        for w in chosen:
            session_id = sessions[w.key]
            if session_id not in mine_now or gitops.session_gitdir(session_id).exists():
                continue
            try:
                made = checkpoint(session_id, w.key, w.volume)
            except WrittenDuring:
                report.written_during.append(session_id)
                continue
            except workspace_archive.NotMovable:
                continue
            except Exception:
                report.failed.append(session_id)
                continue
            state[w.key] = {"volume": w.volume, "written_kb": made["written_kb"], "at": made["at"]}
            _save_state(state)
            report.made.append(session_id)
        _save_state(state)
    return report
