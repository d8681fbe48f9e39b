"""Per-session workspace volumes with a hard quota, and the host-side session registry.

Quota mechanism: one ext4 filesystem image per volume (`truncate` + `mkfs.ext4`), loop-mounted
on the host (nosuid,nodev) and bind-mounted into the container. Why: the host runs overlay2 on
ext4, where `--storage-opt size` is unsupported and project quotas are unavailable; a tmpfs
volume has a size but does not persist. A loop filesystem is a real, persistent block-level cap
("No space left on device" at the quota, nothing spills onto the host disk), it survives
hibernate (stop/start) and host reboots (remounted on resume), and creating one is cheap next to
creating the container (bench/sandbox.py).

The image is sparse, so an idle 1 GB workspace costs only the blocks actually written; hibernate compacts it
(`compact`: the blocks of deleted files go back to the host), so idle history costs its files only.

Layout of a volume filesystem:  workspace/  (-> /workspace)   state/  (-> /home/hangar/.hangar:
the shadow-git snapshot repo and the bound env; persistent, under the same quota, outside the
workspace)   .overlay/ (upper and work dirs when the workspace is an overlay, below). Requires root
(mount/losetup) and e2fsprogs on the host.

A workspace may stand on a shared read-only lower layer (`attach_lower`): an overlayfs mounted on the
volume's workspace/ whose upper and work dirs are on the volume, so every write (and every copy-up of a
lower file) counts against the quota and stays the session's own, while the layer's files cost nothing
per session. The volume is made a shared mount and the container binds workspace/ with rslave
propagation, so an overlay mounted after the container started (a warm-pool claim) appears inside it.
A layer lives while a volume names it (`<layer>/users/<volume>`); the host record
`volumes/<volume>.lower` says which, so a remount (resume, host reboot) mounts the overlay again.

The registry (ROOT/sessions/<key>.json) binds a session to its volume independently of Docker
labels, which cannot be changed after creation (a pooled container is bound by renaming it). Next to
it, <key>.cid remembers the container last seen running (its id, and its init's host pid and start
time), so that a later first contact can tell from /proc that it still runs and attach without asking
Docker which container that is and whether it runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
MS_NOSUID, MS_NODEV, MS_SHARED = 0x2, 0x4, 1 << 20

ROOT = Path(os.environ.get("HANGAR_SANDBOX_ROOT", "/var/lib/hangar"))
SANDBOX_UID = 1000


def _dirs() -> tuple[Path, Path, Path, Path]:
    return ROOT / "volumes", ROOT / "mnt", ROOT / "sessions", ROOT / "locks"


def root_tag() -> str:
    """A short name for this sandbox root (HANGAR_SANDBOX_ROOT), for labels that must not cross roots."""
    return hashlib.sha256(str(ROOT.resolve()).encode()).hexdigest()[:12]


def session_key(session_id: str) -> str:
    """A docker-name-safe key for a session id (the id itself when it already is safe)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}", session_id):
        return session_id
    return "h" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def new_volume_id() -> str:
    return "v" + uuid.uuid4().hex[:20]


def mount_point(volume_id: str) -> Path:
    return _dirs()[1] / volume_id


def lock_path(container_id: str) -> Path:
    """The attach lock of a container, by id (ids survive the rename of a claimed container)."""
    locks = _dirs()[3]
    locks.mkdir(parents=True, exist_ok=True)
    return locks / f"{container_id}.lock"


def claim_marker(volume_id: str) -> Path:
    images = _dirs()[0]
    images.mkdir(parents=True, exist_ok=True)
    return images / f"{volume_id}.claimed"


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True)


def create_volume(volume_id: str, size_mb: int) -> Path:
    images, _, _, _ = _dirs()
    images.mkdir(parents=True, exist_ok=True)
    image = images / f"{volume_id}.img"
    with open(image, "xb") as f:
        f.truncate(size_mb * 1024 * 1024)
    # -m 0: no root-reserved blocks (the sandbox user gets the whole quota).
    proc = _run(
        "mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image)
    )
    if proc.returncode != 0:
        image.unlink(missing_ok=True)
        raise RuntimeError(f"mkfs.ext4 failed: {proc.stderr.strip()}")
    return ensure_mounted(volume_id)


def ensure_mounted(volume_id: str) -> Path:
    """Mount the volume's filesystem if it is not (e.g. after a host reboot). Idempotent."""
    images, _, _, _ = _dirs()
    image, mnt = images / f"{volume_id}.img", mount_point(volume_id)
    if not image.exists():
        raise FileNotFoundError(f"volume {volume_id} has no image")
    mnt.mkdir(parents=True, exist_ok=True)
    if not os.path.ismount(mnt):
        proc = _run("mount", "-o", "loop,nosuid,nodev", str(image), str(mnt))
        if proc.returncode != 0 and not os.path.ismount(mnt):  # a racing process may have won
            raise RuntimeError(f"mount of {volume_id} failed: {proc.stderr.strip()}")
    # Shared, so a container's rslave bind of workspace/ sees an overlay mounted there later (also for a
    # volume mounted before this rule existed: one syscall, idempotent).
    _mount(None, mnt, None, MS_SHARED, None)
    for sub in ("workspace", "state"):
        path = mnt / sub
        if not path.exists():
            path.mkdir(exist_ok=True)
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
    lower = _lower_record(volume_id)
    if lower.exists() and not os.path.ismount(mnt / "workspace"):
        _mount_overlay(mnt, Path(lower.read_text()))
    return mnt


def _mount(source: str | None, target: Path, fstype: str | None, flags: int, data: str | None) -> None:
    def enc(value: str | None) -> bytes | None:
        return value.encode() if value is not None else None

    if _libc.mount(enc(source), enc(str(target)), enc(fstype), flags, enc(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {fstype or ''} on {target}: {os.strerror(errno)}")


# --- a shared read-only lower layer under the workspace --------------------------------------


def _lower_record(volume_id: str) -> Path:
    return _dirs()[0] / f"{volume_id}.lower"


def _mount_overlay(mnt: Path, layer: Path) -> None:
    tree = layer / "tree"
    if not tree.is_dir():
        raise RuntimeError(f"the workspace's lower layer {layer.name} is missing")
    upper, work = mnt / ".overlay" / "upper", mnt / ".overlay" / "work"
    for path in (upper, work):
        path.mkdir(parents=True, exist_ok=True)
    os.chmod(mnt / ".overlay", 0o700)
    os.chown(upper, SANDBOX_UID, SANDBOX_UID)  # the merged root takes the upper dir's owner
    # redirect_dir: a directory renamed in the workspace is recorded, not refused with EXDEV; index off:
    # a layer rebuilt from the same commit (new inodes) still serves an existing upper dir.
    options = f"lowerdir={tree},upperdir={upper},workdir={work},redirect_dir=on,index=off,metacopy=off"
    _mount("overlay", mnt / "workspace", "overlay", MS_NOSUID | MS_NODEV, options)


def attach_lower(volume_id: str, layer: Path) -> Path:
    """Make the volume's workspace an overlay of `layer/tree` (read-only, shared) under the volume's own
    upper dir, replacing whatever the workspace held. Returns the workspace path. The caller holds the
    layer's lock (the layer must not be pruned between its check and this reference)."""
    mnt = ensure_mounted(volume_id)
    detach_lower(volume_id)
    shutil.rmtree(mnt / ".overlay", ignore_errors=True)
    (layer / "users").mkdir(mode=0o700, exist_ok=True)
    (layer / "users" / volume_id).touch()
    record = _lower_record(volume_id)
    tmp = record.with_name(f".{record.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(str(layer))
    os.replace(tmp, record)
    try:
        _mount_overlay(mnt, layer)
    except (OSError, RuntimeError):
        detach_lower(volume_id)
        raise
    return mnt / "workspace"


def detach_lower(volume_id: str) -> None:
    """Unmount the volume's overlay (if any) and drop its reference to the layer. Idempotent."""
    workspace = mount_point(volume_id) / "workspace"
    if os.path.ismount(workspace) and _run("umount", str(workspace)).returncode != 0:
        _run("umount", "-l", str(workspace))
    record = _lower_record(volume_id)
    try:
        layer = Path(record.read_text())
    except FileNotFoundError:
        return
    (layer / "users" / volume_id).unlink(missing_ok=True)
    record.unlink(missing_ok=True)


def unmount(volume_id: str) -> None:
    """Unmount (a hibernated or destroyed volume): mount's loop device is set to clear itself, so the
    loop device goes too. Idempotent."""
    mnt = mount_point(volume_id)
    workspace = mnt / "workspace"
    if os.path.ismount(workspace) and _run("umount", str(workspace)).returncode != 0:
        _run("umount", "-l", str(workspace))
    if os.path.ismount(mnt) and _run("umount", str(mnt)).returncode != 0:
        _run("umount", "-l", str(mnt))  # still busy (a dying container): detach lazily
    try:
        mnt.rmdir()
    except OSError:
        pass


def destroy_volume(volume_id: str) -> None:
    """Unmount and delete. Idempotent; a missing volume is fine."""
    images, _, _, _ = _dirs()
    unmount(volume_id)
    detach_lower(volume_id)
    (images / f"{volume_id}.img").unlink(missing_ok=True)
    claim_marker(volume_id).unlink(missing_ok=True)


def list_volumes() -> list[str]:
    images = _dirs()[0]
    return sorted(p.stem for p in images.glob("*.img")) if images.exists() else []


# --- the session registry -------------------------------------------------------------------


def _record_path(key: str) -> Path:
    return _dirs()[2] / f"{key}.json"


def register(key: str, record: dict[str, Any]) -> bool:
    """Create the session's record atomically; False if the session is already registered."""
    sessions = _dirs()[2]
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(record | {"created_at": time.time()}))
    try:
        os.link(tmp, _record_path(key))  # link fails if the name exists: an atomic create
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def rewrite(key: str, record: dict[str, Any]) -> None:
    """Replace an existing record whole (atomic: readers see the old or the new one)."""
    sessions = _dirs()[2]
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, _record_path(key))


def lookup(key: str) -> dict[str, Any] | None:
    try:
        record: dict[str, Any] = json.loads(_record_path(key).read_text())
        record["last_active"] = _record_path(key).stat().st_mtime
        return record
    except (FileNotFoundError, ValueError):
        return None


def touch(key: str) -> None:
    """Mark activity (the reaper's idle clock is the record's mtime)."""
    try:
        os.utime(_record_path(key))
    except FileNotFoundError:
        pass


def unregister(key: str) -> None:
    _record_path(key).unlink(missing_ok=True)
    _hint_path(key).unlink(missing_ok=True)
    paused_path(key).unlink(missing_ok=True)


# --- a sandbox paused at the disk's watermark (sandbox.watermark) -----------------------------


def paused_path(key: str) -> Path:
    return _dirs()[2] / f"{key}.paused"


def mark_paused(key: str, scope: str, reason: str) -> None:
    sessions = _dirs()[2]
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.paused.tmp"
    tmp.write_text(json.dumps({"scope": scope, "reason": reason, "at": time.time()}))
    os.replace(tmp, paused_path(key))


def clear_paused(key: str) -> None:
    paused_path(key).unlink(missing_ok=True)


def _paused(key: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(paused_path(key).read_text())
        return data
    except (FileNotFoundError, ValueError):
        return None


def paused_reason(key: str) -> str | None:
    """Why the session's sandbox is paused (None: it is not). One failed open when it is not."""
    data = _paused(key)
    return str(data.get("reason", "")) if data is not None else None


def paused_scope(key: str) -> str | None:
    data = _paused(key)
    return str(data.get("scope", "")) if data is not None else None


def compact(volume_id: str) -> None:
    """Give the free blocks of a mounted volume back to the host (syncfs, then fstrim: the loop device
    punches them out of the sparse image), so a hibernated workspace holds only its files. Best effort."""
    mnt = mount_point(volume_id)
    if not os.path.ismount(mnt):
        return
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _libc.syncfs(fd)  # the blocks of deleted files are free only once the deletion is committed
    finally:
        os.close(fd)
    _run("fstrim", str(mnt))


def registered_keys() -> list[str]:
    sessions = _dirs()[2]
    return sorted(p.stem for p in sessions.glob("*.json")) if sessions.exists() else []


# A record's (org, volume), cached by the file's identity: every write replaces the file whole (a new inode;
# its mtime and size are compared too), so a budget check over a thousand records opens only the changed.
_owners: dict[str, tuple[tuple[int, int, int], str, str]] = {}


def org_volumes() -> list[tuple[str, str]]:
    """(org id, volume id) of every registered session that has both: what the disk budgets count."""
    sessions = _dirs()[2]
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    try:
        entries = list(os.scandir(sessions))
    except FileNotFoundError:
        return found
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        try:
            st = entry.stat()
        except FileNotFoundError:
            continue  # removed meanwhile
        identity = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = _owners.get(entry.name)
        if cached is None or cached[0] != identity:
            record = lookup(entry.name[: -len(".json")]) or {}
            cached = (identity, str(record.get("org_id") or ""), str(record.get("volume") or ""))
            _owners[entry.name] = cached
        seen.add(entry.name)
        if cached[1] and cached[2]:
            found.append((cached[1], cached[2]))
    for gone in _owners.keys() - seen:
        _owners.pop(gone, None)
    return found


# --- which container a session had last: a hint for the next first contact ------------------


def _hint_path(key: str) -> Path:
    return _dirs()[2] / f"{key}.cid"


def container_hint(key: str) -> tuple[str, int, int] | None:
    """(container id, its init's host pid, that process's start time) as recorded when the session's
    container was last seen running; None if not recorded."""
    try:
        cid, pid, start = _hint_path(key).read_text().split()
        return (cid, int(pid), int(start)) if re.fullmatch(r"[0-9a-f]{64}", cid) else None
    except (FileNotFoundError, ValueError):
        return None


def process_start(pid: int, container_id: str) -> int | None:
    """The start time (clock ticks since boot) of process `pid` if it runs in container `container_id`
    (its cgroup path names the container), else None. With the pid it names one process for good: a
    pid is reused, never with the same start time. The cgroup check keeps this honest where this
    process sees another pid namespace than Docker's (a pid naming some unrelated process)."""
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as f:
            if container_id.encode() not in f.read():
                return None
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def note_container(key: str, container_id: str, pid: int) -> None:
    start = process_start(pid, container_id) if pid > 0 else None
    if start is None:
        return
    sessions = _dirs()[2]
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.cid.tmp"
    tmp.write_text(f"{container_id} {pid} {start}")
    os.replace(tmp, _hint_path(key))
