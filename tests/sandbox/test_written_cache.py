"""The disk budgets read what every workspace image holds at each check (sandbox.written): an unmounted
(hibernated) image's figure is kept between checks, and is read again after any mount and unmount of it, by
this process or another (the mount log); mounted images are read afresh every time. Real loop mounts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sandbox import budget, registry, volumes, written

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setattr(volumes, "ROOT", tmp_path)
    made: list[str] = []
    yield made
    for volume in made:
        volumes.destroy_volume(volume)


def _stats_of_images(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = os.stat

    def counting(path, *args, **kwargs):
        if str(path).endswith(".img"):
            seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    return seen


def _fill(volume: str, mb: int) -> None:
    mnt = volumes.ensure_mounted(volume)
    with open(mnt / "workspace" / "data.bin", "wb") as f:
        f.write(os.urandom(mb * 2**20))
        os.fsync(f.fileno())
    volumes.unmount(volume)


def test_a_hibernated_image_is_not_read_again_until_it_is_mounted(root, monkeypatch):
    hibernated, live = volumes.new_volume_id(), volumes.new_volume_id()
    for volume in (hibernated, live):
        volumes.create_volume(volume, 64)
        root.append(volume)
    volumes.unmount(hibernated)
    registry.register("ses-h", {"org_id": "org-1", "volume": hibernated})
    registry.register("ses-l", {"org_id": "org-1", "volume": live})
    first = written.images()
    assert set(first) == {hibernated, live}
    stats = _stats_of_images(monkeypatch)
    assert written.images() == first
    assert stats == [str(volumes.ROOT / "volumes" / f"{live}.img")]  # only the mounted one, afresh

    _fill(hibernated, 8)  # mounted, written, unmounted: both told in the log
    after = written.images()
    assert after[hibernated][1] >= first[hibernated][1] + 8 * 2**20
    org = budget.OrgTally.now().volumes_mb["org-1"]
    assert org == pytest.approx((after[hibernated][1] + after[live][1]) / 2**20)


def test_another_process_mounting_and_writing_an_image_is_seen_by_the_next_check(root):
    volume = volumes.new_volume_id()
    volumes.create_volume(volume, 64)
    root.append(volume)
    volumes.unmount(volume)
    before = written.images()[volume][1]
    code = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from sandbox import volumes
        volumes.ROOT = Path({str(volumes.ROOT)!r})
        mnt = volumes.ensure_mounted({volume!r})
        with open(mnt / "workspace" / "other.bin", "wb") as f:
            f.write(os.urandom(6 * 2**20))
            os.fsync(f.fileno())
        volumes.unmount({volume!r})
    """)
    subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, check=True, env=os.environ | {"PYTHONPATH": str(REPO)}
    )
    assert written.images()[volume][1] >= before + 6 * 2**20


def test_a_destroyed_image_is_forgotten_and_a_new_log_forgets_everything(root):
    volume = volumes.new_volume_id()
    volumes.create_volume(volume, 64)
    volumes.unmount(volume)
    assert volume in written.images()
    volumes.destroy_volume(volume)
    assert volume not in written.images()
    kept = volumes.new_volume_id()
    volumes.create_volume(kept, 64)
    root.append(kept)
    volumes.unmount(kept)
    written.images()
    image = volumes.ROOT / "volumes" / f"{kept}.img"
    with open(image, "r+b") as f:  # changed behind the log's back, then the log replaced
        f.seek(32 * 2**20)
        f.write(os.urandom(2**20))
        os.fsync(f.fileno())
    volumes.mounts_log().unlink()
    assert written.images()[kept][1] == min(image.stat().st_blocks * 512, image.stat().st_size)


def test_the_watermark_sweep_reads_the_records_of_mounted_volumes_only(root, monkeypatch):
    from sandbox import watermark

    live, hibernated = volumes.new_volume_id(), volumes.new_volume_id()
    for volume in (live, hibernated):
        volumes.create_volume(volume, 64)
        root.append(volume)
    volumes.unmount(hibernated)
    registry.register("ses-live", {"session_id": "ses-live", "org_id": "o", "volume": live})
    registry.register("ses-hib", {"session_id": "ses-hib", "org_id": "o", "volume": hibernated})
    assert [w.session_id for w in watermark._live()] == ["ses-live"]  # the first sweep reads every record
    read: list[str] = []
    lookup = registry.lookup
    monkeypatch.setattr(registry, "lookup", lambda key: read.append(key) or lookup(key))
    assert [w.session_id for w in watermark._live()] == ["ses-live"]
    assert read == ["ses-live"]  # the next ones, only the mounted volumes' records
