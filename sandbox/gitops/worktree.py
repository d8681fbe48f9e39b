"""A session's git dir and work tree: where they are, giving the session a commit (its workspace an
overlay of the commit's layer, its git dir written by hand, objects borrowed from the mirror), the marker
that says the workspace is ready, and their removal with the session."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path

from sandbox import registry, repo_disk, volumes
from sandbox.gitops.host_files import ALTERNATES, SESSION_CONFIG, _host_dir, _write_host_files
from sandbox.gitops.layers import (
    _build_layer,
    _capacity,
    _fits,
    _fits_budget,
    _layer_size,
    layer_lock,
    layer_path,
    prune_layers,
    tree_size,
)
from sandbox.gitops.remote import GitError


def session_gitdir(session_id: str) -> Path:
    return volumes.ROOT / "repos" / f"{volumes.session_key(session_id)}.git"


def workspace_dir(session_id: str) -> Path:
    """The session volume's workspace on the host (mounted if it was not)."""
    record = registry.lookup(volumes.session_key(session_id))
    if record is None:
        raise GitError(f"session {session_id} has no sandbox volume", kind="error")
    return volumes.ensure_mounted(record["volume"]) / "workspace"


def checkout(
    mirror: Path,
    session_id: str,
    sha: str,
    branch: str,
    cached: Path | None = None,
    elsewhere: Mapping[str, float] | None = None,
) -> Path | None:
    """Give the session `sha` on a new branch: its workspace becomes an overlay of the commit's shared
    read-only tree (built once per mirror and commit), and its git dir (objects borrowed from the mirror,
    the index copied from the tree's) is written directly. No file of the repository is written per
    session, so the time does not grow with the repository's size. GitError(kind="quota") when the
    commit's files exceed the session's disk quota; nothing is then changed.
    `cached`: a cached environment's layer of the same commit (sandbox.env_cache) to stand on instead,
    if it is still there; `elsewhere`: MB by org on the other sandbox hosts, for a new layer's budget.
    Returns the layer the workspace stands on."""
    record = registry.lookup(volumes.session_key(session_id))
    if record is None:
        raise GitError(f"session {session_id} has no sandbox volume", kind="error")
    volume_id = record["volume"]
    capacity = _capacity(volumes.ensure_mounted(volume_id))
    if cached is not None:
        with layer_lock(cached):
            if (cached / "tree").is_dir() and (cached / "index").is_file():
                _fits(_layer_size(cached), capacity)
                volumes.attach_lower(volume_id, cached)
                os.utime(cached)  # recently used: pruned last
                _write_gitdir(session_gitdir(session_id), mirror, cached, sha, branch)
                return cached
    layer = layer_path(mirror, sha)
    built = False
    with layer_lock(layer):
        if not (layer / "tree").is_dir():
            size = tree_size(mirror, sha)
            _fits(size, capacity)
            _fits_budget(size[1], repo_disk.mirror_org(mirror), elsewhere)
            _build_layer(mirror, sha, layer, size)
            built = True
        repo_disk.mark_used(mirror, repo_disk.mirror_org(mirror))
        _fits(_layer_size(layer), capacity)
        volumes.attach_lower(volume_id, layer)
        os.utime(layer)  # recently used: pruned last
    _write_gitdir(session_gitdir(session_id), mirror, layer, sha, branch)
    if built:
        prune_layers()
    return layer


def _write_gitdir(gitdir: Path, mirror: Path, layer: Path, sha: str, branch: str) -> None:
    """A git dir by hand (what `git init` + `update-ref` + `checkout -b` would leave, without a process
    each), owned by the sandbox uid. checkStat minimal: the index's stat data comes from the layer, and
    through the overlay a file's inode and device differ, which would make git re-read every file."""
    shutil.rmtree(gitdir, ignore_errors=True)
    gitdir.parent.mkdir(parents=True, exist_ok=True)
    _write_host_files(gitdir, mirror / "objects")
    files = {
        "HEAD": f"ref: refs/heads/{branch}\n",
        "config": SESSION_CONFIG,
        ALTERNATES: f"{mirror / 'objects'}\n",
        f"refs/heads/{branch}": f"{sha}\n",
        "refs/hangar/base": f"{sha}\n",
        "refs/tags/.keep": "",
    }
    tmp = gitdir.with_name(f".{gitdir.name}.{uuid.uuid4().hex[:8]}")
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (tmp / "refs/tags/.keep").unlink()
        (tmp / "objects" / "pack").mkdir()
        shutil.copyfile(layer / "index", tmp / "index")
        for path in (tmp, *tmp.rglob("*")):
            os.chown(path, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
        os.rename(tmp, gitdir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ready_marker(session_id: str) -> Path:
    return volumes.ROOT / "repos" / f"{volumes.session_key(session_id)}.ready"


def remove_session(session_id: str) -> None:
    shutil.rmtree(session_gitdir(session_id), ignore_errors=True)
    shutil.rmtree(_host_dir(session_gitdir(session_id)), ignore_errors=True)
    ready_marker(session_id).unlink(missing_ok=True)
