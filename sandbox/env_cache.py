"""Cached environments: what a project's setup script left in a workspace, kept as a read-only layer so the
next session on the same repository commit starts from it instead of running the script again (issue 28).

A layer `layers/env-<key>/` (beside the per-commit checkout layers, sandbox.gitops) holds `tree/` (the whole
workspace as the setup script left it: the commit's files and everything the script added or changed), the
base commit's git `index` (so a session's git dir is written as from a checkout layer), `size` (files,
bytes), `org` (whose disk budget it counts in, sandbox.repo_disk) and `info.json` (what the key was made
of, for the console). The key is a digest of everything the result depends on, chosen by the caller
(hangar.engine.workspace.env_cache): the project, the repository commit, the script, the image's id and the env the
script ran with; any change gives another key, so a stale layer is never reused, only pruned.

The tree is copied from the session's workspace by `cp -a` running as the sandbox uid in the git jail
(sandbox.gitjail): the sandbox controls those files while they are copied, so a link swapped in finds
nothing of the host; set-uid and set-gid bits are dropped. Layers are pruned with the checkout layers, least
recently used first, by bytes (HANGAR_REPO_LAYERS_KEEP_MB) and count (gitops.prune_layers); one that does not
fit what the disk budgets leave is not kept (the session itself goes on)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sandbox import budget, gitops, repo_disk, volumes
from sandbox.gitjail import jailed_paths
from sandbox.gitops.layers import layer_lock

PREFIX = "env-"
COPY_TIMEOUT_S = 900


class EnvCacheError(Exception):
    """The environment could not be kept (too large, the copy failed); the session is not affected."""


def layer_path(key: str) -> Path:
    return repo_disk.layers_dir() / f"{PREFIX}{key}"


def find(key: str) -> Path | None:
    layer = layer_path(key)
    return layer if (layer / "tree").is_dir() and (layer / "size").is_file() else None


def _volume_written(volume_id: str) -> int:
    fs = os.statvfs(volumes.mount_point(volume_id))
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize


def capture(
    *,
    key: str,
    volume_id: str,
    org_id: str,
    base_layer: Path | None,
    info: dict[str, Any],
    elsewhere: Mapping[str, float] | None = None,
) -> Path:
    """Keep the volume's workspace as the layer for `key` (a no-op if one is there). `base_layer`: the
    checkout layer the workspace stands on (its index is kept with the tree), None without a repository."""
    layer = layer_path(key)
    with layer_lock(layer):
        if find(key) is not None:
            return layer
        # An upper bound before copying: what the volume holds plus the layer under it.
        estimate = _volume_written(volume_id) + (repo_disk.layer_bytes(base_layer) if base_layer else 0)
        room = budget.repo_room_bytes(org_id, elsewhere=elsewhere)
        if estimate > room:
            raise EnvCacheError(f"the environment ({estimate // 2**20} MB) does not fit the disk budget")
        source = volumes.ensure_mounted(volume_id) / "workspace"
        tmp = repo_disk.layers_dir() / f".{layer.name}.{uuid.uuid4().hex[:8]}"
        try:
            (tmp / "tree").mkdir(parents=True)
            for path in (tmp, tmp / "tree"):
                os.chown(path, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
            _copy(source, tmp / "tree")
            os.chown(tmp, 0, 0)
            os.chmod(tmp, 0o755)
            files, size = _measure(tmp / "tree")
            if size > room:
                raise EnvCacheError(f"the environment ({size // 2**20} MB) does not fit the disk budget")
            if base_layer is not None:
                shutil.copyfile(base_layer / "index", tmp / "index")
            (tmp / "size").write_text(f"{files} {size}")
            (tmp / "org").write_text(org_id)
            (tmp / "info.json").write_text(json.dumps({**info, "created": time.time()}))
            os.rename(tmp, layer)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    gitops.prune_layers()
    return layer


def _copy(source: Path, target: Path) -> None:
    """`cp -a` of the workspace into `target`, jailed as the sandbox uid (module doc)."""
    script = 'cp -a "$0/." "$1/" && find "$1" -perm /6000 -exec chmod ug-s {} +'
    command = ["sh", "-c", script, str(source), str(target)]
    with tempfile.TemporaryDirectory(prefix="hangar-env-jail-") as root:
        if os.getuid() == 0:
            command = jailed_paths(command, root, writable={target}, readable={source})
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=COPY_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise EnvCacheError("copying the environment timed out") from None
    if proc.returncode != 0:
        raise EnvCacheError(f"copying the environment failed: {proc.stderr.strip()[-500:]}")


def _measure(tree: Path) -> tuple[int, int]:
    files = sum(len(names) for _, _, names in os.walk(tree))
    return files, repo_disk.disk_bytes(tree)


def attach(volume_id: str, key: str) -> Path | None:
    """Make the volume's workspace an overlay of the layer for `key`; None if there is none (pruned)."""
    layer = layer_path(key)
    with layer_lock(layer):
        if find(key) is None:
            return None
        volumes.attach_lower(volume_id, layer)
        os.utime(layer)  # recently used: pruned last
    return layer


def listing(org_id: str) -> list[dict[str, Any]]:
    """The org's kept environments: their key, bytes, files, last use and what the key was made of."""
    out: list[dict[str, Any]] = []
    if not repo_disk.layers_dir().exists():
        return out
    for layer in repo_disk.layers_dir().glob(f"{PREFIX}*"):
        try:
            if (layer / "org").read_text().strip() != org_id:
                continue
            files, size = (layer / "size").read_text().split()
            info = json.loads((layer / "info.json").read_text())
            used = layer.stat().st_mtime
        except (OSError, ValueError):
            continue
        out.append(
            {
                "key": layer.name[len(PREFIX) :],
                "bytes": int(size),
                "files": int(files),
                "last_used": used,
                **info,
            }
        )
    return sorted(out, key=lambda e: e["last_used"], reverse=True)


def org_of(layer: Path) -> str:
    try:
        return (layer / "org").read_text().strip()
    except OSError:
        return ""
