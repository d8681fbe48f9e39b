"""A hibernated session's workspace moved between sandbox hosts: exported from one host into a directory
every host reaches (HANGAR_WORKSPACE_ARCHIVE: a shared volume, docs/scale-out.md "Drain"), imported on
another, where the session resumes with its files and its snapshot history.

An export is two files named by the session's key:
  <key>.tar.zst  the volume's tree as the sandbox sees it: workspace/ (an overlay on a checkout or
                 environment layer is read merged, so the destination needs no layer) and state/ (the
                 shadow git of the snapshots, the bound env), numeric owners, modes and times kept;
  <key>.json     the registry record (org, project, spec) without the volume, the workspace's quota and
                 whether its setup ran; written last, it is what says an export exists.
Exporting releases the workspace here (volume, record, host files): a workspace lives on one host or in
the archive, never both. Importing claims the export by renaming its mark (two hosts cannot both take it),
makes a volume of the same quota under the disk budgets (the org's counting its other hosts), unpacks the
tree into it and registers
the session; the next get_or_create makes its container on it. A failed import gives the export back.
A taken export stays in the archive as the session's checkpoint (<key>.checkpoint.*, replaced by the
next): when the host it went to is lost, `restore_checkpoint` makes it the export the next host imports.

A tree rather than the volume's image: the tree is what the session wrote (kilobytes to its files'
size, compressed), where a compacted image still carries its filesystem's metadata, and a tree needs no
layer on the destination. A session whose workspace holds a clone of the project's repository (a host
git dir borrowing the host's mirror, sandbox/gitops) is not moved (`NotMovable`): it stays where it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox import budget, containers, gitops, host_locks, registry, volumes
from sandbox.protocol import SandboxError

SETTING = "HANGAR_WORKSPACE_ARCHIVE"
MARK_ONLY = ("disk_mb", "ready", "exported_at", "bytes", "checkpoint")  # a mark's, not the registry's
TAR = ["tar", "--zstd", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--sparse"]


class NotMovable(SandboxError):
    """This session's workspace cannot be exported (running, a repository clone, nothing to export)."""


def archive_dir() -> Path | None:
    """The directory every host reaches (HANGAR_WORKSPACE_ARCHIVE), read at each call; None: no moves."""
    value = os.environ.get(SETTING, "").strip()
    return Path(value) if value else None


def _paths(session_id: str) -> tuple[Path, Path]:
    where = archive_dir()
    if where is None:
        raise NotMovable(f"{SETTING} is not set: workspaces do not move between hosts")
    key = volumes.session_key(session_id)
    return where / f"{key}.tar.zst", where / f"{key}.json"


def checkpoint_paths(session_id: str) -> tuple[Path, Path]:
    """The session's checkpoint in the archive: (tree, mark), as an export's (sandbox.workspace_checkpoint)."""
    tree, mark = _paths(session_id)
    return tree.with_name(f"{mark.stem}.checkpoint.tar.zst"), mark.with_name(f"{mark.stem}.checkpoint.json")


def restore_checkpoint(session_id: str) -> dict[str, Any] | None:
    """The session's newest export, made the one the next host imports (its host was lost): the export
    waiting in the archive if there is one, else the last one a host imported (kept as the checkpoint).
    Returns its mark ({exported_at, bytes, ...}), or None when the archive has none."""
    if archive_dir() is None:
        return None
    tree, mark = _paths(session_id)
    ckpt_tree, ckpt_mark = checkpoint_paths(session_id)
    with contextlib.suppress(FileNotFoundError):
        if not mark.exists():
            os.replace(ckpt_tree, tree)
            os.replace(ckpt_mark, mark)  # the mark last: it is what says an export exists
    try:
        meta: dict[str, Any] = json.loads(mark.read_text())
    except FileNotFoundError:
        return None
    return meta


def forget_checkpoint(session_id: str) -> None:
    """The session is destroyed: its checkpoint goes with it (after a checkpoint being written)."""
    if archive_dir() is not None:
        with checkpoint_lock(session_id):
            for path in checkpoint_paths(session_id):
                path.unlink(missing_ok=True)


@contextlib.contextmanager
def checkpoint_lock(session_id: str) -> Iterator[None]:
    """Held while this host writes or removes the session's checkpoint (striped: bounded lock files)."""
    with host_locks.held(f"checkpoint-{zlib.crc32(session_id.encode()) % 64}.lock"):
        yield


def exported(session_id: str) -> bool:
    """An export of the session's workspace waits in the archive."""
    return archive_dir() is not None and _paths(session_id)[1].exists()


def export(api: docker.APIClient, session_id: str) -> dict[str, Any]:
    """Export the session's hibernated workspace and release it here. Returns {bytes, seconds}."""
    key = volumes.session_key(session_id)
    tree, mark = _paths(session_id)
    record = registry.lookup(key)
    if record is None or not record.get("volume"):
        raise NotMovable(f"session {session_id} has no workspace on this host")
    try:
        api.inspect_container(containers.session_container_name(session_id))
        raise NotMovable(f"session {session_id}'s sandbox is not hibernated")
    except docker.errors.NotFound:
        pass
    if gitops.session_gitdir(session_id).exists():
        raise NotMovable(f"session {session_id}'s workspace is a clone of the project's repository")
    started = time.monotonic()
    tree.parent.mkdir(parents=True, exist_ok=True)
    mnt = volumes.ensure_mounted(record["volume"])
    tmp = tree.with_name(f".{tree.name}.{uuid.uuid4().hex[:8]}")
    try:
        _check_room(session_id, mnt, tree.parent)
        proc = subprocess.run(
            [*TAR, "-cf", str(tmp), "-C", str(mnt), "workspace", "state"], capture_output=True
        )
        if proc.returncode != 0:
            raise SandboxError(f"export of {session_id}'s workspace failed: {proc.stderr.decode()[-500:]}")
        os.replace(tmp, tree)
    finally:
        tmp.unlink(missing_ok=True)
        volumes.unmount(record["volume"])
    meta = mark_of(record, session_id, exported_at=time.time(), size=tree.stat().st_size)
    write_atomically(mark, json.dumps(meta))
    volumes.destroy_volume(record["volume"])
    gitops.remove_session(session_id)
    registry.unregister(key)
    return {"bytes": meta["bytes"], "seconds": round(time.monotonic() - started, 3)}


def _check_room(session_id: str, mnt: Path, archive: Path) -> None:
    """Refuse an export the archive has no room for, before writing any of it: what the volume holds
    (its filesystem's used blocks, more than the compressed tree) against the archive's free space. A
    full archive found half-way fails too and keeps the workspace; this says why, and writes nothing."""
    used, free = os.statvfs(mnt), os.statvfs(archive)
    held = (used.f_blocks - used.f_bfree) * used.f_frsize
    room = free.f_bavail * free.f_frsize
    if held > room:
        raise SandboxError(
            f"the workspace archive has {room // 2**20} MB free; session {session_id}'s workspace"
            f" holds {held // 2**20} MB: not exported, it stays on this host"
        )


def import_(
    session_id: str,
    *,
    budget_limits: budget.Limits | None = None,
    elsewhere: Mapping[str, float] | None = None,
) -> dict[str, Any] | None:
    """Import the session's exported workspace onto this host; None if there is no export (or another
    host took it first). The org's (and its owners') disk budgets count `elsewhere` too: MB by org on the
    other sandbox hosts. Returns {volume, bytes, seconds}."""
    key = volumes.session_key(session_id)
    tree, mark = _paths(session_id)
    claim = mark.with_name(f".{mark.name}.{uuid.uuid4().hex[:8]}.importing")
    try:
        os.rename(mark, claim)
    except FileNotFoundError:
        return None
    started = time.monotonic()
    volume_id, registered = None, False
    try:
        meta: dict[str, Any] = json.loads(claim.read_text())
        if registry.lookup(key) is not None:
            raise SandboxError(f"session {session_id} already has a workspace on this host")
        spec = meta.get("spec") or {}
        disk_mb = int(meta.get("disk_mb") or spec.get("disk_mb") or 1024)
        volume_id = volumes.new_volume_id()
        with budget.reserving():
            budget.check(
                disk_mb,
                org_id=meta.get("org_id") or "",
                limits=budget_limits,
                groups=spec.get("disk_groups") or (),
                elsewhere=elsewhere,
            )
            mnt = volumes.create_volume(volume_id, disk_mb)
        proc = subprocess.run(
            [*TAR, "-xf", str(tree), "-C", str(mnt), "--same-owner", "--same-permissions"],
            capture_output=True,
        )
        if proc.returncode != 0:
            raise SandboxError(f"import of {session_id}'s workspace failed: {proc.stderr.decode()[-500:]}")
        volumes.compact(volume_id)
        volumes.unmount(volume_id)
        record = {k: v for k, v in meta.items() if k not in MARK_ONLY}
        registered = registry.register(key, record | {"volume": volume_id})
        if not registered:
            raise SandboxError(f"session {session_id} was registered on this host meanwhile")
        if meta.get("ready"):
            marker = gitops.ready_marker(session_id)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
    except BaseException:
        if registered:
            registry.unregister(key)
        if volume_id is not None:
            volumes.destroy_volume(volume_id)  # ours, whoever else registered the session meanwhile
        os.rename(claim, mark)  # the export is still whole: give it back
        raise
    # Kept as the session's checkpoint: what a host loss restores from (`restore_checkpoint`).
    ckpt_tree, ckpt_mark = checkpoint_paths(session_id)
    os.replace(tree, ckpt_tree)
    os.replace(claim, ckpt_mark)
    return {"volume": volume_id, "bytes": meta.get("bytes"), "seconds": round(time.monotonic() - started, 3)}


def mark_of(record: dict[str, Any], session_id: str, *, exported_at: float, size: int) -> dict[str, Any]:
    """An export's mark: the registry record without the volume, the quota, whether the setup ran."""
    spec = record.get("spec") or {}
    return {k: v for k, v in record.items() if k not in ("volume", "last_active")} | {
        "disk_mb": int(spec.get("disk_mb") or 0) or None,
        "ready": gitops.ready_marker(session_id).exists(),
        "exported_at": exported_at,
        "bytes": size,
    }


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(text)
    os.replace(tmp, path)
