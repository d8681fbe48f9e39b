"""Disk budgets, thin provisioned: what workspaces write counts (not their quotas), against a global budget,
the real free space above a high watermark, and a per-org budget; a create past a line is refused and
leaves nothing behind; a running workspace past a line is paused with a clear error and its files intact
(sandbox.watermark) while other orgs keep working; hibernate compacts and unmounts the volume (and frees its
loop device). Real Docker, real loop mounts; the budgets are the operator's environment settings."""

from __future__ import annotations

import math
import os
import subprocess

import pytest

from sandbox import budget, registry, repo_disk, volumes, watermark
from sandbox.protocol import SandboxError, SandboxPaused, SandboxSpec
from tests.sandbox.conftest import RUN_ID

LIMITS = dict(memory_mb=256, pids=128)


def _written_mb() -> float:
    return budget.usage().written_mb + repo_disk.used_mb()


def _free_mb() -> float:
    fs = os.statvfs(volumes.ROOT)
    return fs.f_bavail * fs.f_frsize / 2**20


def _image_mb(volume_id: str) -> float:
    return (volumes.ROOT / "volumes" / f"{volume_id}.img").stat().st_blocks * 512 / 2**20


def _volume(sid: str) -> str:
    return registry.lookup(volumes.session_key(sid))["volume"]


def _nothing_left(sandboxes, sid: str) -> None:
    assert registry.lookup(volumes.session_key(sid)) is None
    assert not sandboxes.is_running(sid)


def test_a_create_past_the_global_budget_of_written_bytes_is_refused_and_leaves_nothing(
    sandboxes, new_session_id, monkeypatch
):
    # Room for what is written now and 40 MB more; the quotas (64 MB each) are not held.
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_BUDGET_MB", str(math.ceil(_written_mb()) + 40))
    first = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), disk_mb=64, **LIMITS))
    second = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), disk_mb=64, **LIMITS))
    assert second.exec("echo ok").output == "ok\n"
    first.exec("head -c 48M /dev/urandom > fill.bin && sync")
    before = set(volumes.list_volumes())
    sid = new_session_id()
    with pytest.raises(SandboxError, match=r"sandbox disk budget exhausted: \d+ MB of \d+ MB written"):
        sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=64, **LIMITS))
    _nothing_left(sandboxes, sid)
    assert set(volumes.list_volumes()) == before


def test_a_create_below_the_high_watermark_of_free_space_is_refused(sandboxes, new_session_id, monkeypatch):
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_HEADROOM_MB", str(int(_free_mb()) + 64))
    sid = new_session_id()
    with pytest.raises(SandboxError, match="sandbox disk at its high watermark"):
        sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=64, **LIMITS))
    _nothing_left(sandboxes, sid)


def test_an_org_budget_counts_written_bytes_not_quotas_and_another_org_still_creates(
    sandboxes, new_session_id, monkeypatch
):
    monkeypatch.setenv("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", "40")
    org, other = f"org-{new_session_id()}", f"org-{new_session_id()}"
    # Two 64 MB workspaces in a 40 MB budget: their quotas are not held, only their blocks count.
    boxes = [
        sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), org_id=org, disk_mb=64, **LIMITS))
        for _ in range(2)
    ]
    assert budget.org_written_mb(org) < 10
    boxes[0].exec("head -c 40M /dev/urandom > fill.bin && sync")
    assert budget.org_written_mb(org) >= 40
    sid = new_session_id()
    with pytest.raises(
        SandboxError, match=r"organisation sandbox disk budget exhausted: \d+ MB of 40 MB written"
    ):
        sandboxes.get_or_create(SandboxSpec(session_id=sid, org_id=org, disk_mb=64, **LIMITS))
    _nothing_left(sandboxes, sid)
    box = sandboxes.get_or_create(
        SandboxSpec(session_id=new_session_id(), org_id=other, disk_mb=64, **LIMITS)
    )
    assert box.exec("echo ok").output == "ok\n"


def test_a_workspace_that_fills_the_disk_to_the_watermark_is_paused_with_a_clear_error_and_its_files_intact(
    sandboxes, new_session_id, monkeypatch
):
    org, other = f"org-{new_session_id()}", f"org-{new_session_id()}"
    heavy_sid, light_sid, bystander_sid = new_session_id(), new_session_id(), new_session_id()
    heavy = sandboxes.get_or_create(SandboxSpec(session_id=heavy_sid, org_id=org, disk_mb=128, **LIMITS))
    light = sandboxes.get_or_create(SandboxSpec(session_id=light_sid, org_id=org, disk_mb=128, **LIMITS))
    bystander = sandboxes.get_or_create(
        SandboxSpec(session_id=bystander_sid, org_id=other, disk_mb=128, **LIMITS)
    )
    heavy.write("notes.txt", "keep me\n")
    light.write("small.txt", "small\n")
    # The line: what is written now and 40 MB more. The heavy writer crosses it.
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_BUDGET_MB", str(math.ceil(_written_mb()) + 40))
    heavy.exec("head -c 56M /dev/urandom > data.bin && sync")
    digest = heavy.exec("sha256sum data.bin").output.split()[0]
    report = watermark.sweep(sandboxes)
    assert report.paused == [heavy_sid] and "host" in report.pressure
    with pytest.raises(SandboxPaused, match=r"sandbox paused: sandbox disk budget exhausted.*files are kept"):
        heavy.exec("echo more >> notes.txt")
    state = sandboxes.api.inspect_container(heavy.container_name)["State"]
    assert state["Paused"] and state["Running"]
    # Nobody else is paused: another org's session (and the same org's light one) keep working.
    assert bystander.exec("echo ok").output == "ok\n"
    assert light.exec("cat small.txt").output == "small\n"
    assert watermark.sweep(sandboxes).paused == []  # paused already, and the disk no longer grows
    # Room again (the operator raised the budget): the next sweep lets it go, every file intact.
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_BUDGET_MB", str(math.ceil(_written_mb()) + 200))
    assert watermark.sweep(sandboxes).resumed == [heavy_sid]
    assert heavy.exec("cat notes.txt").output == "keep me\n"
    assert heavy.exec("sha256sum data.bin").output.split()[0] == digest
    assert heavy.exec("stat -c %s data.bin").output.strip() == str(56 * 2**20)


def test_hibernate_compacts_the_workspace_image_and_resume_brings_every_file_back(sandboxes, new_session_id):
    sid = new_session_id()
    box = sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=128, **LIMITS))
    box.exec("head -c 64M /dev/urandom > scratch.bin && sync && rm scratch.bin")
    box.write("keep.txt", "kept\n")
    box.exec("sync")
    assert _image_mb(_volume(sid)) > 60  # the deleted file's blocks are still in the image
    sandboxes.hibernate(sid)
    assert _image_mb(_volume(sid)) < 8
    assert sandboxes.resume(sid).exec("cat keep.txt").output == "kept\n"


def test_two_hundred_hibernated_sessions_of_2_gb_quota_fit_where_36_did(sandboxes, monkeypatch):
    """The real create and hibernate paths of the volumes (no containers, to keep it fast): a new workspace
    is checked against the budgets, made, registered, then hibernated."""
    free = _free_mb()
    # The old rule (every quota promised in full) let 36 workspaces of 2 GB into this much room.
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_HEADROOM_MB", str(int(free - 36.5 * 2048)))
    org = f"org-{RUN_ID}-hibernated"
    made = []
    try:
        for i in range(200):
            sid = f"t{RUN_ID}-hib-{i:03d}"
            volume_id = volumes.new_volume_id()
            with budget.reserving():
                budget.check(2048, org_id=org)
                volumes.create_volume(volume_id, 2048)
            assert registry.register(
                volumes.session_key(sid), {"session_id": sid, "volume": volume_id, "org_id": org}
            )
            made.append(sid)
            sandboxes.hibernate(sid)
            assert not os.path.ismount(volumes.mount_point(volume_id))
        assert budget.org_written_mb(org) < 200 * 8
        assert budget.usage().reserved_mb >= 200 * 2048  # 400 GB of quotas on a disk with far less
    finally:
        for sid in made:
            sandboxes.destroy(sid)


def test_hibernate_unmounts_the_workspace_and_frees_its_loop_device_resume_mounts_it(
    sandboxes, new_session_id
):
    sid = new_session_id()
    box = sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=64, **LIMITS))
    box.write("keep.txt", "kept\n")
    volume_id = registry.lookup(volumes.session_key(sid))["volume"]
    image = str(volumes.ROOT / "volumes" / f"{volume_id}.img")
    assert os.path.ismount(volumes.mount_point(volume_id))
    sandboxes.hibernate(sid)
    assert not os.path.ismount(volumes.mount_point(volume_id))
    assert subprocess.run(["losetup", "-j", image], capture_output=True, text=True).stdout == ""
    resumed = sandboxes.resume(sid)
    assert resumed.exec("cat keep.txt").output == "kept\n"
    assert os.path.ismount(volumes.mount_point(volume_id))


def test_the_sweeps_state_is_saved_by_many_threads_at_once_without_a_lost_write_error():
    """The worker is threaded and beat's sweep may run in any thread: each save writes a temporary file of
    its own before the rename (a name per process only had one thread rename another's file away)."""
    import threading

    errors: list[BaseException] = []

    def save_many(n: int) -> None:
        try:
            for i in range(300):
                watermark._save_state({f"org-{n}": float(i)})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=save_many, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert watermark._load_state()  # the last save is whole JSON


def test_the_registrys_org_volumes_follow_every_rewrite_and_removal(monkeypatch, tmp_path):
    """The budgets' one pass over the registry caches each record by its file's identity: a record
    rewritten (another volume, another size) or removed is read again or dropped, never served stale."""
    monkeypatch.setattr(volumes, "ROOT", tmp_path)
    registry.register("ses-a", {"org_id": "7", "volume": "va"})
    registry.register("ses-b", {"org_id": "8", "volume": ""})  # no volume yet: counts for nothing
    assert registry.org_volumes() == [("7", "va")]
    for volume in ("vb", "vb2", "vc"):  # same key, rewritten whole each time (inodes may be reused)
        registry.rewrite("ses-a", {"org_id": "7", "volume": volume})
        assert registry.org_volumes() == [("7", volume)]
    registry.rewrite("ses-b", {"org_id": "8", "volume": "vd"})
    assert sorted(registry.org_volumes()) == [("7", "vc"), ("8", "vd")]
    registry.unregister("ses-a")
    assert registry.org_volumes() == [("8", "vd")]


def test_a_new_workspace_is_formatted_outside_the_budget_lock(sandboxes, new_session_id, monkeypatch):
    """The budget lock covers the check and the image file it counts; mkfs and the mount run after it, so
    sandboxes starting together (a ramp of a thousand) format at once instead of one after another."""
    import fcntl

    held_during_format: list[bool] = []
    real_format = volumes.format_volume

    def format_volume(volume_id: str):
        fd = os.open(volumes.ROOT / "locks" / "budget.lock", os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held_during_format.append(False)
        except BlockingIOError:
            held_during_format.append(True)
        finally:
            os.close(fd)  # releases the probe's own lock
        return real_format(volume_id)

    monkeypatch.setattr(volumes, "format_volume", format_volume)
    box = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), disk_mb=64, **LIMITS))
    box.write("here.txt", "formatted and mounted\n")
    assert held_during_format == [False]
    assert box.read("here.txt").content.strip() == "formatted and mounted"
