"""An org's disk budget counts what it wrote on the other sandbox hosts (`elsewhere`: MB by org, from their
heartbeats, handed in by the engine) in every check where the budget is per org, not only before a new
workspace (test_budget.py; tests/engine/test_two_hosts_caps.py across two engines):
- the watermark's pause of a heavy writer (sandbox.watermark): the org's line is crossed by its bytes here
  and elsewhere together, and its heaviest writer *here* is paused; the host's own line stays this disk's;
- the room a clone, fetch or layer may write (budget.repo_room_bytes, gitops.mirror_sync);
- a moved workspace's import (workspace_archive.import_).
Real Docker and loop mounts on this host; the other hosts are their reported figures."""

from __future__ import annotations

import pytest

from sandbox import budget, gitops, registry, volumes, watermark
from sandbox.gitops.remote import Remote
from sandbox.protocol import QuotaExceeded, SandboxPaused, SandboxSpec
from sandbox.workspace_archive import SETTING, export, exported, import_

LIMITS = dict(memory_mb=256, pids=128)


def test_the_watermark_pauses_a_writer_here_when_its_org_is_over_budget_counting_other_hosts(
    sandboxes, new_session_id, monkeypatch
):
    monkeypatch.setenv("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", "40")
    org = f"org-{new_session_id()}"
    sid = new_session_id()
    box = sandboxes.get_or_create(SandboxSpec(session_id=sid, org_id=org, disk_mb=64, **LIMITS))
    box.exec("head -c 8M /dev/urandom > data.bin && sync")
    assert budget.org_written_mb(org) < 40

    # Under its budget with what it wrote on another host: nothing paused.
    assert watermark.sweep(sandboxes, elsewhere={org: 20.0}).paused == []
    # Over it together: its writer here is paused, and the reason names the other hosts' share.
    report = watermark.sweep(sandboxes, elsewhere={org: 35.0})
    assert report.paused == [sid] and "host" not in report.pressure  # this disk has room
    assert "MB on other sandbox hosts" in report.pressure[f"org:{org}"]
    with pytest.raises(SandboxPaused, match="organisation sandbox disk budget exhausted"):
        box.exec("true")
    # The other host freed its share (its next heartbeat): the writer here runs again.
    assert watermark.sweep(sandboxes, elsewhere={}).resumed == [sid]
    assert box.exec("stat -c %s data.bin").output.strip() == str(8 * 2**20)


def test_the_room_a_fetch_may_write_leaves_out_what_the_org_wrote_on_other_hosts(monkeypatch, tmp_path):
    monkeypatch.setenv("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", "100")
    monkeypatch.setenv("HANGAR_REPO_MAX_MB", "1000")
    org, other = "org-room-a", "org-room-b"
    alone = budget.repo_room_bytes(org)
    assert alone <= 100 * budget.MB
    shared = budget.repo_room_bytes(org, elsewhere={org: 70.0, other: 500.0})
    assert shared == alone - 70 * budget.MB
    assert budget.repo_room_bytes(other, elsewhere={org: 70.0}) == budget.repo_room_bytes(other)
    # No room left with the other hosts' share: a clone is refused before git runs.
    remote = Remote(url="https://git.example.invalid/r.git", host="git.example.invalid", port=443)
    with pytest.raises(gitops.GitError, match="disk budget has no room left") as refused:
        gitops.mirror_sync(remote, scope=org, elsewhere={org: 100.0})
    assert refused.value.kind == "quota"


def test_an_import_counts_what_the_org_wrote_on_other_hosts(sandboxes, new_session_id, monkeypatch, tmp_path):
    monkeypatch.setenv(SETTING, str(tmp_path / "archive"))
    monkeypatch.setenv("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", "40")
    org, sid = f"org-{new_session_id()}", new_session_id()
    spec = SandboxSpec(session_id=sid, org_id=org, disk_mb=64, **LIMITS)
    sandboxes.get_or_create(spec).write("/workspace/kept.txt", "kept\n")
    sandboxes.hibernate(sid)
    export(sandboxes.api, sid)
    before = set(volumes.list_volumes())

    with pytest.raises(QuotaExceeded, match=r"of 40 MB written .*45 MB on other sandbox hosts"):
        import_(sid, elsewhere={org: 45.0})
    assert exported(sid) and set(volumes.list_volumes()) == before  # given back, no volume left
    assert registry.lookup(volumes.session_key(sid)) is None

    assert import_(sid, elsewhere={org: 10.0}) is not None
    assert sandboxes.get_or_create(spec).read("/workspace/kept.txt").content.endswith("kept")
