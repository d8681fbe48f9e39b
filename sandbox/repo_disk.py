"""Host disk taken by repositories: the mirrors (sandbox.gitops) and the read-only layers checked out of
them. Neither lives in a workspace volume, so neither counts in a volume's quota: this module is their
term of the disk budgets (sandbox.budget adds it to the volumes'), their size cap per fetch, and what
pruning them looks at.

Per mirror, beside it: `<key>.org` (the org it was fetched for; its mtime is the mirror's last use) and
`<key>.size` (bytes on disk, measured after each fetch). A layer's bytes are its `size` file (the tree's
blocks), its org the one of the mirror it came from (a cached environment, sandbox.env_cache, names its
own in its `org` file). Archives are streamed from Docker's archive API and
uploads go into the workspace volume, so neither leaves anything on the host to count.

Settings (environment): HANGAR_REPO_MAX_MB (the most one clone or fetch may write, default 2048),
HANGAR_REPO_MIRROR_IDLE_DAYS (a mirror unused that long, that no session borrows from, is removed;
default 14), HANGAR_REPO_LAYERS_KEEP_MB (unused layers kept beyond that, least recently used first, are
removed; default 4096).
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox import volumes

MB = 1024 * 1024


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def max_fetch_bytes() -> int:
    return _env_int("HANGAR_REPO_MAX_MB", 2048) * MB


def mirror_idle_s() -> float:
    return float(os.environ.get("HANGAR_REPO_MIRROR_IDLE_DAYS", "").strip() or 14) * 86400


def layers_keep_bytes() -> int:
    return _env_int("HANGAR_REPO_LAYERS_KEEP_MB", 4096) * MB


def mirrors_dir() -> Path:
    return volumes.ROOT / "mirrors"


def layers_dir() -> Path:
    return volumes.ROOT / "layers"


def _org_record(mirror: Path) -> Path:
    return mirror.with_suffix(".org")


def _size_record(mirror: Path) -> Path:
    return mirror.with_suffix(".size")


def mirror_org(mirror: Path) -> str:
    try:
        return _org_record(mirror).read_text().strip()
    except FileNotFoundError:
        return ""


def mark_used(mirror: Path, org_id: str) -> None:
    """Record (or refresh) which org the mirror serves; its mtime is the mirror's last use."""
    record = _org_record(mirror)
    record.write_text(org_id)
    os.utime(record)


def last_used(mirror: Path) -> float:
    for path in (_org_record(mirror), mirror):
        try:
            return path.stat().st_mtime
        except FileNotFoundError:
            continue
    return 0.0


def disk_bytes(path: Path) -> int:
    """Bytes on disk under `path` (blocks, links not followed)."""
    total = 0
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return total


def measure_mirror(mirror: Path) -> int:
    size = disk_bytes(mirror)
    _size_record(mirror).write_text(str(size))
    return size


def _mirror_bytes(mirror: Path) -> int:
    try:
        return int(_size_record(mirror).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def layer_bytes(layer: Path) -> int:
    try:
        return int((layer / "size").read_text().split()[1])
    except (FileNotFoundError, IndexError, ValueError):
        return 0


def bytes_by_org() -> dict[str, int]:
    """Bytes the repositories take on the host, per org that fetched them ("" for none), in one pass."""
    totals: dict[str, int] = {}
    orgs: dict[str, str] = {}
    if mirrors_dir().exists():
        for mirror in mirrors_dir().glob("*.git"):
            orgs[mirror.stem] = owner = mirror_org(mirror)
            totals[owner] = totals.get(owner, 0) + _mirror_bytes(mirror)
    if layers_dir().exists():
        for layer in layers_dir().iterdir():
            if layer.name.startswith(".") or not layer.is_dir():
                continue
            owner = _layer_org(layer, orgs)
            totals[owner] = totals.get(owner, 0) + layer_bytes(layer)
    return totals


def used_bytes(org_id: str = "") -> int:
    """Bytes the repositories take on the host: all of them, or those fetched for `org_id`."""
    totals = bytes_by_org()
    return totals.get(org_id, 0) if org_id else sum(totals.values())


def _layer_org(layer: Path, mirror_orgs: dict[str, str]) -> str:
    """A checkout layer's org is its mirror's; a cached environment (sandbox.env_cache) says its own."""
    if layer.name.startswith("env-"):
        try:
            return (layer / "org").read_text().strip()
        except OSError:
            return ""
    return mirror_orgs.get(layer.name.split("-", 1)[0], "")


def used_mb(org_id: str = "") -> float:
    return used_bytes(org_id) / MB
