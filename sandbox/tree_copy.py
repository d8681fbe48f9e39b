"""Copy one snapshot tree of a sandbox's workspace into another sandbox (a forked session's files as of
the fork point), through the two in-container agents only.

The tree is packed inside the source sandbox by its own git (the shadow repo is the sandbox's, written by
code that runs there: it is read only by a process of that sandbox, never by the host), handed over as
bytes by the worker (one `read_bytes`, at most `MAX_BYTES` compressed), and unpacked by tar inside the
destination. Files the tree does not hold (ignored ones, such as build outputs) are not copied, as a
snapshot never held them. A destination that already holds files (its repository clone, what its setup
script made) keeps only those the tree holds, and its ignored ones: a file the tree does not hold but the
destination's own snapshot does is removed, so the workspace is the tree's.
"""

from __future__ import annotations

import re
import shlex
import uuid

from sandbox.containers import STATE_MOUNT
from sandbox.protocol import WORKSPACE, Sandbox, SandboxError

SNAPSHOT_GIT = f"{STATE_MOUNT}/snapshot"  # the shadow repo (agent/main.py: STATE_DIR + "/snapshot")
MAX_BYTES = 16 << 20  # agent/fileops.py: the most one read_bytes hands over
TIMEOUT_S = 300
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Run in the destination after unpacking: remove what its snapshot `had` held that the pack does not.
PRUNE = (
    "import os, subprocess, sys, tarfile\n"
    "pack, had, git, root = sys.argv[1:5]\n"
    "names = {m.name.removeprefix('./') for m in tarfile.open(pack)}\n"
    "out = subprocess.run(['git', '--git-dir', git, 'ls-tree', '-r', '-z', '--name-only', had],"
    " capture_output=True, check=True).stdout.decode('utf-8', 'surrogateescape')\n"
    "for name in filter(None, out.split('\\0')):\n"
    "    path = os.path.join(root, name)\n"
    "    if name not in names and os.path.lexists(path) and not os.path.isdir(path):\n"
    "        os.unlink(path)\n"
)


class TreeTooLarge(SandboxError):
    """The tree does not fit in one hand-over (MAX_BYTES compressed)."""


def copy_tree(source: Sandbox, tree: str, destination: Sandbox) -> None:
    """Write the files of `source`'s snapshot `tree` into `destination`'s workspace (over what is there)."""
    if not re.fullmatch(r"[0-9a-f]{4,64}", tree):
        raise SandboxError(f"{tree!r} is not a tree hash")
    pack = f"/tmp/hangar-tree-{uuid.uuid4().hex[:12]}.tgz"
    packed = source.exec(
        f"git --git-dir {SNAPSHOT_GIT} archive --format=tar.gz -o {pack} {tree}",
        cwd=WORKSPACE,
        env={},
        timeout_s=TIMEOUT_S,
    )
    try:
        if packed.status != "exited" or packed.exit_code != 0:
            raise SandboxError(f"packing the tree failed: {packed.output.strip()[-500:]}")
        try:
            data = source.read_bytes(pack, max_bytes=MAX_BYTES)
        except SandboxError as exc:
            if "too large" in str(exc):
                raise TreeTooLarge(
                    f"The workspace at that point is over {MAX_BYTES >> 20} MiB compressed: too large to copy."
                ) from None
            raise
    finally:
        source.exec(f"rm -f {pack}", env={}, timeout_s=30)
    had = destination.snapshot_track()
    prune = (
        ""
        if had == EMPTY_TREE
        else f" && python3 -c {shlex.quote(PRUNE)} {pack} {had} {SNAPSHOT_GIT} {WORKSPACE}"
    )
    destination.write(pack, data)
    unpacked = destination.exec(
        f"tar -xzf {pack} -C {WORKSPACE}{prune}; status=$?; rm -f {pack}; exit $status",
        cwd=WORKSPACE,
        env={},
        timeout_s=TIMEOUT_S,
    )
    if unpacked.status != "exited" or unpacked.exit_code != 0:
        raise SandboxError(f"unpacking the tree failed: {unpacked.output.strip()[-500:]}")
