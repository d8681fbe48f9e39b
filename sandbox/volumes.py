"""Per-session workspace volumes with a hard quota: loop filesystem images, their mounts and overlays.

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

The session registry that binds a session to its volume is sandbox.registry.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

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


def mounts_log() -> Path:
    """Every mount and unmount of a volume's image, one line each (its id): sandbox.written's caches of
    what unmounted images hold forget a volume when its line appears."""
    return _dirs()[0] / "mounts.log"


def note_mount(volume_id: str) -> None:
    """Log a volume's mount (called before it) or unmount (after it): its image may change in between."""
    path = mounts_log()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{volume_id}\n".encode())  # one short O_APPEND write: lines never interleave
    finally:
        os.close(fd)


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True)


def create_volume(volume_id: str, size_mb: int) -> Path:
    allocate(volume_id, size_mb)
    return format_volume(volume_id)


def allocate(volume_id: str, size_mb: int) -> None:
    """The volume's sparse image file: what a disk-budget check counts, made under its lock (sandbox.budget).
    `format_volume` may follow outside the lock, so that sandboxes starting together format at once."""
    images, _, _, _ = _dirs()
    images.mkdir(parents=True, exist_ok=True)
    with open(images / f"{volume_id}.img", "xb") as f:
        f.truncate(size_mb * 1024 * 1024)


def format_volume(volume_id: str) -> Path:
    """Make the allocated image an ext4 filesystem and mount it; the image is removed if mkfs fails."""
    image = _dirs()[0] / f"{volume_id}.img"
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
        note_mount(volume_id)
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
    note_mount(volume_id)  # after: what the image holds now is final until its next mount


def destroy_volume(volume_id: str) -> None:
    """Unmount and delete. Idempotent; a missing volume is fine."""
    images, _, _, _ = _dirs()
    unmount(volume_id)
    detach_lower(volume_id)
    (images / f"{volume_id}.img").unlink(missing_ok=True)
    claim_marker(volume_id).unlink(missing_ok=True)
    channel_secret_path(volume_id).unlink(missing_ok=True)


def channel_secret_path(volume_id: str) -> Path:
    """The agent channel's secret of the volume's container (sandbox/channel.py): root's, in a 0700 dir."""
    secrets_dir = ROOT / "channel"
    secrets_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return secrets_dir / f"{volume_id}.key"


def list_volumes() -> list[str]:
    images = _dirs()[0]
    return sorted(p.stem for p in images.glob("*.img")) if images.exists() else []


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
