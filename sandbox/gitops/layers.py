"""The read-only trees per commit under layers/, the lower layers of workspaces: one per mirror and
commit, checked out once as the sandbox uid and never changed after, checked against a session's disk
quota and the org's disk budget before it is built, locked while a volume claims it, and pruned least
recently used once no volume stands on it."""

from __future__ import annotations

import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from sandbox import budget, repo_disk, volumes
from sandbox.gitops.remote import GitError
from sandbox.gitops.run import git


def layers_dir() -> Path:
    return repo_disk.layers_dir()


def layer_path(mirror: Path, sha: str) -> Path:
    """The tree of `sha` from `mirror`: per mirror (so per org) as the mirror is."""
    return layers_dir() / f"{mirror.stem}-{sha}"


class layer_lock:
    """An exclusive flock on one layer (its creation, its users, its removal), across processes."""

    def __init__(self, layer: Path):
        layers_dir().mkdir(parents=True, exist_ok=True)
        os.chmod(layers_dir(), 0o755)
        self.path = layers_dir() / f".{layer.name}.lock"

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def tree_size(mirror: Path, sha: str) -> tuple[int, int]:
    """(files, bytes on disk rounded up to 4 KiB blocks) of the commit's tree, without checking it out."""
    out = git("--git-dir", str(mirror), "ls-tree", "-r", "-l", "-z", "--full-tree", sha).stdout
    files = size = 0
    for entry in out.split("\0"):
        meta = entry.split("\t", 1)[0].split()
        if len(meta) == 4 and meta[3].isdigit():
            files += 1
            size += -(-int(meta[3]) // 4096) * 4096
    return files, size


def _capacity(mnt: Path) -> tuple[int, int]:
    fs = os.statvfs(mnt)
    return fs.f_files, fs.f_blocks * fs.f_frsize


def _fits(size: tuple[int, int], capacity: tuple[int, int]) -> None:
    (files, used), (max_files, max_bytes) = size, capacity
    if used > max_bytes or files > max_files:
        raise GitError(
            f"The repository ({files} files, {used // 2**20} MB) does not fit in the session's disk quota "
            f"({max_bytes // 2**20} MB, {max_files} files).",
            kind="quota",
        )


def _fits_budget(size: int, org_id: str, elsewhere: Mapping[str, float] | None = None) -> None:
    """A layer is the org's too (sandbox.repo_disk): it must fit what the disk budgets leave (`elsewhere`:
    MB by org on the other sandbox hosts)."""
    room = budget.repo_room_bytes(org_id, elsewhere=elsewhere)
    if size > room:
        raise GitError(
            f"The repository's files ({size // 2**20} MB) do not fit in the disk budget left for "
            f"repositories ({max(room, 0) // 2**20} MB).",
            kind="quota",
        )


def _layer_size(layer: Path) -> tuple[int, int]:
    files, size = (layer / "size").read_text().split()
    return int(files), int(size)


def _build_layer(mirror: Path, sha: str, layer: Path, size: tuple[int, int]) -> None:
    """Check `sha` out into a fresh directory as the sandbox uid (its files are the sandbox's once copied
    up), with an index beside it, then rename it into place: a failure leaves no layer."""
    tmp = layers_dir() / f".{layer.name}.{uuid.uuid4().hex[:8]}"
    try:
        (tmp / "tree").mkdir(parents=True)
        for path in (tmp, tmp / "tree"):
            os.chown(path, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
        g = ("--git-dir", str(mirror), "--work-tree", str(tmp / "tree"))
        index = {"GIT_INDEX_FILE": str(tmp / "index")}
        git(*g, "read-tree", "--reset", "-u", sha, env=index, as_sandbox_user=True)
        # Older than the index: no entry is "racily clean", so no session re-reads a file to trust it.
        past = time.time() - 10
        for path in (tmp / "tree").rglob("*"):
            os.utime(path, (past, past), follow_symlinks=False)
        git(*g, "update-index", "-q", "--refresh", env=index, as_sandbox_user=True, check=False)
        (tmp / "size").write_text(f"{size[0]} {size[1]}")
        os.rename(tmp, layer)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def has_live_users(layer: Path) -> bool:
    """Whether a volume that still exists stands on the layer (a user whose volume is gone does not count)."""
    users = layer / "users"
    return users.is_dir() and any(
        (volumes.ROOT / "volumes" / f"{u.name}.img").exists() for u in users.iterdir()
    )


def prune_layers(keep: int | None = None, keep_bytes: int | None = None) -> list[str]:
    """Remove the least recently used layers no volume stands on, beyond `keep` unused ones or beyond
    `keep_bytes` of them, whichever comes first (a reference whose volume is gone does not count)."""
    keep = int(os.environ.get("HANGAR_REPO_LAYERS_KEEP", "8")) if keep is None else keep
    keep_bytes = repo_disk.layers_keep_bytes() if keep_bytes is None else keep_bytes
    if not layers_dir().exists():
        return []
    unused = []
    for layer in layers_dir().iterdir():
        if layer.name.startswith(".") or not layer.is_dir():
            continue
        if not has_live_users(layer):
            unused.append((layer.stat().st_mtime, layer))
    kept = kept_bytes = 0
    removed = []
    for _, layer in sorted(unused, reverse=True):
        size = repo_disk.layer_bytes(layer)
        if kept < keep and kept_bytes + size <= keep_bytes:
            kept, kept_bytes = kept + 1, kept_bytes + size
            continue
        if remove_layer(layer):
            removed.append(layer.name)
    return removed


def remove_layer(layer: Path) -> bool:
    """Remove the layer unless a volume stands on it (False then): renamed away under its lock, deleted after."""
    with layer_lock(layer):
        if not layer.is_dir() or has_live_users(layer):
            return False  # claimed meanwhile
        doomed = layer.with_name(f".{layer.name}.gone-{uuid.uuid4().hex[:8]}")
        os.rename(layer, doomed)
    shutil.rmtree(doomed, ignore_errors=True)
    return True
