"""Periodic checkpoints of live workspaces (sandbox/workspace_checkpoint.py): a workspace that changed is
copied to the archive as its session's checkpoint while its sandbox runs, at most once per interval, only
when no block was written during the copy, one sweep at a time per host, none at the disk's watermark;
the checkpoint is what a lost host's session is restored from (workspace_archive.restore_checkpoint).
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time

import pytest

from sandbox import budget, host_locks, registry, volumes, workspace_archive, workspace_checkpoint
from sandbox.protocol import SandboxSpec
from sandbox.workspace_checkpoint import SETTLED_GAP_S, Live, due, sweep

INTERVAL_S = 300.0


@pytest.fixture
def archive(tmp_path, monkeypatch):
    where = tmp_path / "archive"
    monkeypatch.setenv(workspace_archive.SETTING, str(where))
    return where


def _spec(session_id: str) -> SandboxSpec:
    return SandboxSpec(session_id=session_id, memory_mb=256, pids=128, disk_mb=64, org_id="org-ckpt")


def _counted(session_id: str) -> int:
    """The workspace's write count once what it wrote is flushed (what the kernel's writeback does
    within seconds, now)."""
    volume = registry.lookup(volumes.session_key(session_id))["volume"]
    fd = os.open(volumes.mount_point(volume), os.O_RDONLY | os.O_DIRECTORY)
    try:
        ctypes.CDLL(None).syncfs(fd)
        return workspace_checkpoint.written_kb(fd)
    finally:
        os.close(fd)


def _quiet(session_id: str) -> None:
    """Wait until the sandbox stops writing: its agent writes its snapshot repository on its own after a
    start and a write (a sweep meanwhile throws its copy away and tries again at the next)."""
    deadline = time.monotonic() + 30
    before = _counted(session_id)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _counted(session_id)
        if now == before:
            return
        before = now
    raise AssertionError(f"session {session_id}'s workspace never stopped being written")


def only(session_id: str):
    """The platform places only this test's session on the host: other tests of this process may have left
    live sandboxes under the same root, which a sweep would otherwise checkpoint too."""
    return lambda ids: {session_id} & set(ids)


def _mark(session_id: str) -> dict:
    return json.loads(workspace_archive.checkpoint_paths(session_id)[1].read_text())


def test_due_takes_changed_workspaces_once_per_interval_longest_waiting_first():
    state = {
        "same": {"volume": "v1", "written_kb": 10, "at": 0.0},
        "recent": {"volume": "v2", "written_kb": 10, "at": 950.0},
        "old": {"volume": "v3", "written_kb": 10, "at": 100.0},
        "older": {"volume": "v4", "written_kb": 10, "at": 50.0},
        "moved": {"volume": "v-before", "written_kb": 99, "at": 990.0},
    }
    live = [
        Live("same", "v1", 10),  # nothing written since: never due, however old
        Live("recent", "v2", 11),  # written, but checkpointed within the interval
        Live("old", "v3", 12),
        Live("older", "v4", 11),
        Live("moved", "v5", 99),  # another volume (imported, recreated): changed, within the interval
        Live("new", "v6", 1),  # never checkpointed
    ]
    chosen, unchanged, not_due = due(live, state, INTERVAL_S, now=1000.0)
    assert [w.key for w in chosen] == ["new", "older", "old"]
    assert (unchanged, not_due) == (1, 2)
    chosen = due(live, state, INTERVAL_S, now=1300.0)[0]
    assert [w.key for w in chosen] == ["new", "older", "old", "recent", "moved"]
    # A run that ended: its workspace is due a minute after its last checkpoint, not an interval after.
    settled = frozenset({"recent", "moved", "same"})
    chosen = due(live, state, INTERVAL_S, now=950.0 + SETTLED_GAP_S, settled=settled)[0]
    assert [w.key for w in chosen] == ["new", "older", "old", "recent"], "moved: within its minute"


def test_a_live_workspace_is_checkpointed_when_it_changed_and_restored_from_it(
    sandboxes, new_session_id, archive
):
    sid = new_session_id()
    box = sandboxes.get_or_create(_spec(sid))
    box.write("/workspace/one.txt", "one\n")
    _quiet(sid)

    first = sweep(INTERVAL_S, ours=only(sid))
    assert sid in first.made, first
    mark = _mark(sid)
    assert mark["checkpoint"] is True and mark["org_id"] == "org-ckpt" and mark["bytes"] > 0
    assert sandboxes.is_running(sid), "the sandbox was copied as it ran"
    assert not workspace_archive.exported(sid), "a checkpoint is not an export waiting to be imported"

    again = sweep(INTERVAL_S, ours=only(sid), now=time.time() + INTERVAL_S)
    assert sid not in again.made and again.unchanged >= 1, "nothing written since: no copy, even when due"
    box.write("/workspace/two.txt", "two\n")
    _quiet(sid)
    assert sid not in sweep(INTERVAL_S, ours=only(sid)).made, "changed, but checkpointed within the interval"
    # Its run is over: what it wrote is checkpointed a minute after the last copy, within the interval.
    assert SETTLED_GAP_S < INTERVAL_S
    later = sweep(INTERVAL_S, ours=only(sid), settled=only(sid), now=time.time() + SETTLED_GAP_S)
    assert sid in later.made, later
    assert _mark(sid)["exported_at"] > mark["exported_at"]
    key = volumes.session_key(sid)
    names = sorted(p.name for p in archive.iterdir())
    assert names == [f"{key}.checkpoint.json", f"{key}.checkpoint.tar.zst"], "the last one replaced"

    # The host is gone: the session's next host restores the checkpoint (here, this host after its loss).
    box.write("/workspace/three.txt", "after the checkpoint\n")
    sandboxes.destroy(sid)
    restored = workspace_archive.restore_checkpoint(sid)
    assert restored is not None and restored["checkpoint"] is True
    assert workspace_archive.import_(sid) is not None
    box = sandboxes.get_or_create(_spec(sid))
    assert box.exec("cat one.txt two.txt; test -e three.txt || echo gone", cwd="/workspace").output == (
        "one\ntwo\ngone\n"
    )
    workspace_archive.forget_checkpoint(sid)  # destroyed through its host: the checkpoint goes too
    assert list(archive.iterdir()) == []


def test_a_copy_written_during_is_thrown_away_and_no_step_waits_for_a_checkpoint(
    sandboxes, new_session_id, archive
):
    sid = new_session_id()
    box = sandboxes.get_or_create(_spec(sid))
    box.write("/workspace/big.bin", os.urandom(8 << 20))  # a copy long enough to overlap the writes
    outputs: list[str] = []
    writer = threading.Thread(
        target=lambda: outputs.append(
            box.exec(
                "end=$(($(date +%s) + 4)); while [ $(date +%s) -lt $end ]; do echo x >> w.txt; done; echo done",
                cwd="/workspace",
                timeout_s=30,
            ).output
        )
    )
    writer.start()
    volume = registry.lookup(volumes.session_key(sid))["volume"]
    written = volumes.mount_point(volume) / "workspace" / "w.txt"
    deadline = time.monotonic() + 10
    while not written.exists() and time.monotonic() < deadline:  # the step is under way
        time.sleep(0.05)
    report = sweep(INTERVAL_S, ours=only(sid))
    assert writer.is_alive(), "the sweep ended while the step still ran: it did not wait for it"
    assert report.written_during == [sid] and not report.made, report
    assert not workspace_archive.checkpoint_paths(sid)[0].exists()
    assert not [p for p in archive.iterdir() if p.name.startswith(".")], "no partial copy left behind"
    writer.join()
    assert outputs == ["done\n"]

    _quiet(sid)
    assert sweep(INTERVAL_S, ours=only(sid)).made == [sid], "quiet again: the next sweep copies it"


def test_the_bounds_off_one_sweep_per_host_the_watermark_and_only_the_hosts_sessions(
    sandboxes, new_session_id, archive, monkeypatch
):
    sid = new_session_id()
    sandboxes.get_or_create(_spec(sid)).write("/workspace/a.txt", "a\n")
    assert sweep(0).skipped == "checkpoints are off"
    with host_locks.held_if_free(workspace_checkpoint.SWEEP_LOCK) as mine:
        assert mine
        assert sweep(INTERVAL_S, ours=only(sid)).skipped == "another checkpoint sweep runs on this host"
    full = sweep(INTERVAL_S, ours=only(sid), limits=budget.Limits(headroom_mb=10**9))
    assert "high watermark" in full.skipped and not full.made
    assert sid not in sweep(INTERVAL_S, ours=lambda ids: set()).made, "the database places it elsewhere"
    monkeypatch.delenv(workspace_archive.SETTING)
    assert sweep(INTERVAL_S, ours=only(sid)).skipped == "checkpoints are off"
    assert not archive.exists() or not any(archive.iterdir())
