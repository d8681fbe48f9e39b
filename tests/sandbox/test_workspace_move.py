"""A hibernated session's workspace moves between sandbox hosts (sandbox/workspace_archive.py): exported on
host B (deploy/hosts/hostb.sh's second engine) into the archive directory both reach, imported on host A
(this machine's engine), resumed there with its files, modes, owners, its own git history and its
snapshot history intact; B keeps nothing of it.
"""

from __future__ import annotations

import os
import subprocess

import docker.errors
import pytest

from sandbox import budget, containers, registry, volumes
from sandbox.budget import QuotaExceeded
from sandbox.protocol import SandboxError, SandboxSpec
from sandbox.workspace_archive import SETTING, NotMovable, export, exported, import_
from tests.sandbox.conftest import TEST_LABEL
from tests.sandbox.hostb import host_b  # noqa: F401 (fixture)

# What the workspace holds, as the sandbox sees it: every path with its type, mode, owner and content hash.
FINGERPRINT = (
    "cd /workspace && find . -path ./proj/.git -prune -o -printf '%y %m %U:%G %p\\n' | sort"
    " && find . -type f -not -path './proj/.git/*' -print0 | sort -z | xargs -0 sha256sum"
)
GIT_LOG = (
    "git -C /workspace/proj log --format='%H %an %ae %at %s' && git -C /workspace/proj status --porcelain"
)


pytestmark = pytest.mark.usefixtures(
    "tcp_transport"
)  # the agent channel over TCP (tests/sandbox/conftest.py)


@pytest.fixture
def archive(tmp_path, monkeypatch):
    where = tmp_path / "archive"  # on one machine both hosts reach it; between machines a shared volume
    monkeypatch.setenv(SETTING, str(where))
    return where


def _spec(session_id: str) -> SandboxSpec:
    return SandboxSpec(session_id=session_id, memory_mb=256, pids=128, disk_mb=64, org_id="org-move")


def test_a_workspace_moves_from_b_to_a(host_b, sandboxes, new_session_id, archive):  # noqa: F811
    sid, key = new_session_id(), None
    b_sandboxes = host_b.sandboxes(TEST_LABEL)
    with host_b.active():
        key = volumes.session_key(sid)
        box = b_sandboxes.get_or_create(_spec(sid))
        first = box.snapshot_track()
        box.write("/workspace/notes.md", "# on host b\n")
        box.write("/workspace/data/blob.bin", bytes(range(256)) * 64)
        box.write("/workspace/run.sh", "#!/bin/sh\necho ran\n")
        made = box.exec(
            "chmod 755 run.sh && mkdir -p proj && cd proj && git init -q -b main && git config user.name B"
            " && git config user.email b@example.com && echo one > f && git add f && git commit -qm one"
            " && echo two >> f && git commit -qam two && ln -s ../notes.md link",
            cwd="/workspace",
            timeout_s=60,
        )
        assert made.exit_code == 0, made.output
        second = box.snapshot_track()
        fingerprint, log = box.exec(FINGERPRINT).output, box.exec(GIT_LOG).output
        diff_on_b = [(d.path, d.status, d.after) for d in box.snapshot_diff(first, second)]
        assert {"notes.md", "data/blob.bin", "run.sh"} <= {path for path, _, _ in diff_on_b}
        assert "run.sh" in fingerprint and log.splitlines()[-1] == "?? link" and len(log.splitlines()) == 3
        b_sandboxes.hibernate(sid)
        volume_on_b = registry.lookup(key)["volume"]
        moved = export(host_b.client.api, sid)
        assert moved["bytes"] > 0
        # B keeps nothing of it: no record, no volume image, no container.
        assert registry.lookup(key) is None and volume_on_b not in volumes.list_volumes()
    with pytest.raises(docker.errors.NotFound):
        host_b.client.api.inspect_container(containers.session_container_name(sid))
    assert exported(sid)

    imported = import_(sid)  # this process's sandbox root: host A
    assert imported is not None and imported["volume"] != volume_on_b
    kept = sorted(p.name for p in archive.iterdir())
    assert not exported(sid) and kept == [f"{key}.checkpoint.json", f"{key}.checkpoint.tar.zst"], (
        "the archive gives the workspace up once taken, keeping it as the checkpoint only"
    )
    on_a = sandboxes.get_or_create(_spec(sid))
    assert registry.lookup(key)["org_id"] == "org-move"
    assert on_a.exec(FINGERPRINT).output == fingerprint
    assert on_a.exec(GIT_LOG).output == log
    assert on_a.exec("./run.sh && cat proj/link", cwd="/workspace").output == "ran\n# on host b\n"
    # The snapshot history came along: B's snapshots still diff on A, and nothing changed since.
    assert on_a.snapshot_track() == second
    assert [(d.path, d.status, d.after) for d in on_a.snapshot_diff(first, second)] == diff_on_b


def test_only_a_hibernated_workspace_is_exported_and_an_export_is_taken_once(
    host_b,  # noqa: F811
    sandboxes,
    new_session_id,
    archive,
):
    sid = new_session_id()
    box = sandboxes.get_or_create(_spec(sid))
    box.write("/workspace/keep.txt", "kept")
    with pytest.raises(NotMovable, match="not hibernated"):
        export(sandboxes.api, sid)
    assert registry.lookup(volumes.session_key(sid)) is not None, "a refused export releases nothing"
    assert import_(new_session_id()) is None  # no export: nothing to take

    sandboxes.hibernate(sid)
    export(sandboxes.api, sid)
    with host_b.active():
        assert import_(sid) is not None  # host B takes it...
        try:
            assert import_(sid) is None  # ...and no one else can
        finally:
            record = registry.lookup(volumes.session_key(sid))
            volumes.destroy_volume(record["volume"])
            registry.unregister(volumes.session_key(sid))


def test_a_workspace_on_a_layer_is_exported_merged(sandboxes, new_session_id, archive, tmp_path):
    """A workspace standing on a read-only layer (a checkout's, an environment's: volumes.attach_lower) is
    exported as the sandbox sees it, so the host it moves to needs no such layer; the source's reference
    to the layer goes with the workspace."""
    layer = tmp_path / "layer"
    (layer / "tree" / "src").mkdir(parents=True)
    (layer / "tree" / "src" / "base.py").write_text("BASE = 1\n")
    (layer / "tree" / "README").write_text("from the layer\n")
    for path in (layer / "tree", *(layer / "tree").rglob("*")):
        os.chown(path, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
    sid = new_session_id()
    sandboxes.get_or_create(_spec(sid))
    sandboxes.hibernate(sid)
    volume_id = registry.lookup(volumes.session_key(sid))["volume"]
    volumes.attach_lower(volume_id, layer)
    volumes.unmount(volume_id)
    box = sandboxes.get_or_create(_spec(sid))
    box.write("/workspace/src/base.py", "BASE = 2\n")  # a copy-up onto the volume
    box.write("/workspace/new.txt", "mine\n")
    box.remove("/workspace/README")  # a whiteout over the layer's file
    sandboxes.hibernate(sid)

    export(sandboxes.api, sid)
    assert not (layer / "users" / volume_id).exists(), "the layer is no longer used by the exported workspace"
    import_(sid)
    moved = registry.lookup(volumes.session_key(sid))["volume"]
    assert not (volumes.ROOT / "volumes" / f"{moved}.lower").exists()
    box = sandboxes.get_or_create(_spec(sid))
    assert (
        box.exec("cat src/base.py new.txt; ls", cwd="/workspace").output == "BASE = 2\nmine\nnew.txt\nsrc\n"
    )


def test_a_failed_import_gives_the_export_back_and_leaves_no_volume(sandboxes, new_session_id, archive):
    sid = new_session_id()
    sandboxes.get_or_create(_spec(sid)).write("/workspace/kept.txt", "kept\n")
    sandboxes.hibernate(sid)
    export(sandboxes.api, sid)
    before = set(volumes.list_volumes())

    with pytest.raises(QuotaExceeded):  # this host has no room (its watermark): refused before any volume
        import_(sid, budget_limits=budget.Limits(headroom_mb=10**9))
    assert exported(sid) and set(volumes.list_volumes()) == before

    tree = archive / f"{volumes.session_key(sid)}.tar.zst"
    whole = tree.read_bytes()
    tree.write_bytes(whole[: len(whole) // 2])  # a truncated archive: unpacking fails after the volume exists
    with pytest.raises(SandboxError, match="import of"):
        import_(sid)
    assert exported(sid) and set(volumes.list_volumes()) == before
    assert registry.lookup(volumes.session_key(sid)) is None

    tree.write_bytes(whole)
    assert import_(sid) is not None
    assert sandboxes.get_or_create(_spec(sid)).read("/workspace/kept.txt").content.endswith("kept")


def test_an_archive_without_room_refuses_the_export_and_keeps_the_workspace(
    sandboxes, new_session_id, archive
):
    """A workspace holding more than the archive's free space is not exported: a clear error before a
    byte is written, the workspace still on this host, nothing left in the archive."""
    archive.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(archive)], check=True)
    try:
        sid = new_session_id()
        box = sandboxes.get_or_create(_spec(sid))
        box.exec("head -c 3000000 /dev/urandom > /workspace/big.bin && sync")
        sandboxes.hibernate(sid)
        with pytest.raises(
            SandboxError, match=r"archive has 1 MB free; session .* holds [2-9] MB: not exported"
        ):
            export(sandboxes.api, sid)
        assert os.listdir(archive) == []
        assert registry.lookup(volumes.session_key(sid)) is not None
        box = sandboxes.get_or_create(_spec(sid))  # resumes here, its file whole
        assert box.exec("stat -c %s /workspace/big.bin").output.strip() == "3000000"
    finally:
        subprocess.run(["umount", str(archive)], check=True)
