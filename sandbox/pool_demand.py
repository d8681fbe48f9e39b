"""What the warm pool should hold: the shapes (image, workspace quota) sessions asked for lately.

A container's image and its workspace volume's quota are fixed when it is made (Docker cannot change a
container's image; the quota is the size of a loop filesystem, which this host cannot grow while mounted:
online resize2fs needs CAP_SYS_RESOURCE); memory, CPUs and pids are not: a claim sets them (`docker update`).
So a shape is (image, disk_mb), and every claim, warm or not, is demand for its shape. The record is the
host's, not a process's: one small JSON file per shape under ROOT/pool/<labels>/ (its mtime is the last
claim), so every worker's pool with the same labels keeps the same shapes and none retires what another
was asked for. A shape asked for within DEMAND_WINDOW_S is kept warm, as many containers as it was
claimed in the last RATE_WINDOW_S (at least one, at most the pool's size); the template's shape always
has the pool's size. `None` as the image means the pool's base image, whatever release that is now.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sandbox import volumes

DEMAND_WINDOW_S = 15 * 60  # a shape nobody asked for in this long is retired
RATE_WINDOW_S = 60  # claims in this window size a shape's share
MAX_SHAPES = 8  # besides the template's: the most recently asked for
KEEP_CLAIMS = 32


@dataclass(frozen=True)
class Shape:
    image: str | None  # None: the pool's base image
    disk_mb: int


def directory(labels: dict[str, str]) -> Path:
    tag = hashlib.sha256(json.dumps(sorted(labels.items())).encode()).hexdigest()[:12]
    return volumes.ROOT / "pool" / tag


def _path(folder: Path, shape: Shape) -> Path:
    name = hashlib.sha256(f"{shape.image or ''}|{shape.disk_mb}".encode()).hexdigest()[:16]
    return folder / f"{name}.json"


def record(folder: Path, shape: Shape, stamps: list[float]) -> None:
    """Add claims of `shape` at `stamps` (a lost update between two processes loses a stamp, no more)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = _path(folder, shape)
    try:
        claims = json.loads(path.read_text()).get("claims", [])
    except (FileNotFoundError, ValueError):
        claims = []
    claims = sorted(claims + stamps)[-KEEP_CLAIMS:]
    tmp = folder / f".{path.name}.{uuid.uuid4().hex[:8]}"
    tmp.write_text(json.dumps({"image": shape.image, "disk_mb": shape.disk_mb, "claims": claims}))
    os.replace(tmp, path)


def targets(folder: Path, template: Shape, size: int, now: float | None = None) -> dict[Shape, int]:
    """How many unclaimed containers of each shape the pool should hold."""
    if size <= 0:
        return {}
    now = time.time() if now is None else now
    wanted: dict[Shape, int] = {template: size}
    found: list[tuple[float, Shape, int]] = []
    for path in folder.glob("*.json") if folder.exists() else []:
        try:
            asked = path.stat().st_mtime
            data = json.loads(path.read_text())
            shape = Shape(data["image"], int(data["disk_mb"]))
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            continue
        if now - asked > DEMAND_WINDOW_S:
            path.unlink(missing_ok=True)
            continue
        recent = sum(1 for stamp in data.get("claims", []) if now - stamp <= RATE_WINDOW_S)
        found.append((asked, shape, min(size, max(1, recent))))
    for _asked, shape, count in sorted(found, key=lambda f: f[0], reverse=True)[:MAX_SHAPES]:
        wanted[shape] = max(wanted.get(shape, 0), count)
    return wanted
