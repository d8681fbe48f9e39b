"""Disk budgets: sparse quota images are reserved against a global budget (with headroom against the real
free space of the sandbox root's filesystem) and a per-org budget; an overcommitting create is refused and
leaves nothing behind; hibernate unmounts the volume (and frees its loop device). Real Docker, real loop
mounts; the budgets are the operator's environment settings."""

from __future__ import annotations

import os
import subprocess

import pytest

from sandbox import volumes
from sandbox.protocol import SandboxError, SandboxSpec

LIMITS = dict(memory_mb=256, pids=128)


def _reserved_mb() -> float:
    images = volumes.ROOT / "volumes"
    return sum(p.stat().st_size for p in images.glob("*.img")) / 2**20 if images.exists() else 0.0


def _free_mb() -> float:
    fs = os.statvfs(volumes.ROOT)
    return fs.f_bavail * fs.f_frsize / 2**20


def _nothing_left(sandboxes, sid: str) -> None:
    assert volumes.lookup(volumes.session_key(sid)) is None
    assert not sandboxes.is_running(sid)


def test_a_create_that_would_overcommit_the_global_budget_is_refused_and_leaves_nothing(
    sandboxes, new_session_id, monkeypatch
):
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_BUDGET_MB", str(int(_reserved_mb()) + 100))
    first = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), disk_mb=64, **LIMITS))
    assert first.exec("echo ok").output == "ok\n"
    before = set(volumes.list_volumes())
    sid = new_session_id()
    with pytest.raises(SandboxError, match="sandbox disk budget exhausted"):
        sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=64, **LIMITS))
    _nothing_left(sandboxes, sid)
    assert set(volumes.list_volumes()) == before


def test_a_create_beyond_the_real_free_space_minus_headroom_is_refused(
    sandboxes, new_session_id, monkeypatch
):
    # Whatever the quotas add up to, a new one must leave the headroom free if every workspace fills up.
    monkeypatch.setenv("HANGAR_SANDBOX_DISK_HEADROOM_MB", str(int(_free_mb()) - 32))
    sid = new_session_id()
    with pytest.raises(SandboxError, match="sandbox disk full"):
        sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=64, **LIMITS))
    _nothing_left(sandboxes, sid)


def test_an_org_over_its_budget_cannot_create_another_sandbox_but_another_org_can(
    sandboxes, new_session_id, monkeypatch
):
    monkeypatch.setenv("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", "100")
    org, other = f"org-{new_session_id()}", f"org-{new_session_id()}"
    sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), org_id=org, disk_mb=64, **LIMITS))
    sid = new_session_id()
    with pytest.raises(SandboxError, match="organisation sandbox disk budget exhausted: 64 MB of 100 MB"):
        sandboxes.get_or_create(SandboxSpec(session_id=sid, org_id=org, disk_mb=64, **LIMITS))
    _nothing_left(sandboxes, sid)
    box = sandboxes.get_or_create(
        SandboxSpec(session_id=new_session_id(), org_id=other, disk_mb=64, **LIMITS)
    )
    assert box.exec("echo ok").output == "ok\n"


def test_hibernate_unmounts_the_workspace_and_frees_its_loop_device_resume_mounts_it(
    sandboxes, new_session_id
):
    sid = new_session_id()
    box = sandboxes.get_or_create(SandboxSpec(session_id=sid, disk_mb=64, **LIMITS))
    box.write("keep.txt", "kept\n")
    volume_id = volumes.lookup(volumes.session_key(sid))["volume"]
    image = str(volumes.ROOT / "volumes" / f"{volume_id}.img")
    assert os.path.ismount(volumes.mount_point(volume_id))
    sandboxes.hibernate(sid)
    assert not os.path.ismount(volumes.mount_point(volume_id))
    assert subprocess.run(["losetup", "-j", image], capture_output=True, text=True).stdout == ""
    resumed = sandboxes.resume(sid)
    assert resumed.exec("cat keep.txt").output == "kept\n"
    assert os.path.ismount(volumes.mount_point(volume_id))
