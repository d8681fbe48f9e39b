"""snapshot_track_changed: one round trip that tracks and names exactly the paths that differ from a base
tree, agreeing with `diff-tree` (snapshot_changed) in every case; and the repo made at container start."""

import json
import time

import pytest

from sandbox.protocol import SandboxError

STATE = "/home/hangar/.hangar/snapshot"


def agrees_with_diff_tree(box, base, tree, paths):
    assert paths == box.snapshot_changed(base, tree)
    return paths


def test_it_names_new_modified_and_deleted_files_but_not_touched_ones_nor_huge_ones(box):
    box.write("keep.txt", "same\n")
    box.write("edit.txt", "v1\n")
    box.write("gone.txt", "bye\n")
    box.write("rewritten.txt", "identical\n")
    box.exec("head -c 3000000 /dev/zero > grows.bin; echo small > will_grow.bin")
    base, paths = box.snapshot_track_changed(None)
    assert paths == [] and base == box.snapshot_track()

    box.exec(
        "touch keep.txt; printf 'identical\\n' > rewritten.txt; echo v2 >> edit.txt; rm gone.txt; "
        "mkdir -p sub && echo n > sub/new.txt; head -c 3000000 /dev/zero > huge.bin; "
        "head -c 3000001 /dev/zero > will_grow.bin"
    )
    tree, paths = box.snapshot_track_changed(base)
    assert paths == ["edit.txt", "gone.txt", "sub/new.txt"]
    agrees_with_diff_tree(box, base, tree, paths)
    # Unchanged workspace: same tree, nothing named, and the tree is real (diff works against it).
    again, paths = box.snapshot_track_changed(tree)
    assert (again, paths) == (tree, [])
    assert [d.path for d in box.snapshot_diff(base, again)] == ["edit.txt", "gone.txt", "sub/new.txt"]


def test_it_names_mode_and_type_changes_and_odd_names(box):
    box.write("run.sh", "echo hi\n")
    box.write("target.txt", "t\n")
    box.write("link", "a plain file first\n")
    box.write("fileish", "a file that becomes a directory\n")
    box.write("dirish/inner.txt", "a directory that becomes a file\n")
    base = box.snapshot_track()
    odd = ["with space.txt", "quote'\"é.txt", "star*.txt", "new\nline.txt"]
    box.exec(
        "chmod +x run.sh; rm link; ln -s target.txt link; "
        "rm fileish; mkdir fileish; echo in > fileish/inner; rm -r dirish; echo now a file > dirish"
    )
    for name in odd:
        box.write(name, "x\n")
    tree, paths = box.snapshot_track_changed(base)
    changed = ["run.sh", "link", "fileish", "fileish/inner", "dirish", "dirish/inner.txt", *odd]
    assert paths == sorted(changed, key=lambda p: p.encode())
    agrees_with_diff_tree(box, base, tree, paths)
    # No newline in the names listed now: the fast path (`add --verbose`), same answers.
    box.exec(
        "echo y > 'star*.txt'; rm -r fileish; echo back > fileish; rm dirish; mkdir dirish; echo i > dirish/i"
    )
    later, paths = box.snapshot_track_changed(tree)
    assert paths == ["dirish", "dirish/i", "fileish", "fileish/inner", "star*.txt"]
    agrees_with_diff_tree(box, tree, later, paths)


def test_a_base_that_is_not_the_last_tree_is_diffed_precisely(box):
    box.write("a.txt", "a1\n")
    box.write("b.txt", "b1\n")
    first = box.snapshot_track()
    box.write("a.txt", "a2\n")
    box.write("b.txt", "b2\n")
    second = box.snapshot_track()
    box.write("b.txt", "b1\n")  # back to what `first` had
    box.write("c.txt", "c\n")
    third, paths = box.snapshot_track_changed(first)
    assert paths == ["a.txt", "c.txt"]
    agrees_with_diff_tree(box, first, third, paths)
    assert box.snapshot_changed(second, third) == ["b.txt", "c.txt"]


def test_after_a_restore_or_revert_changes_are_still_exact(box):
    box.write("a.txt", "a1\n")
    first = box.snapshot_track()
    box.write("a.txt", "a2\n")
    box.write("b.txt", "b\n")
    second = box.snapshot_track()
    box.snapshot_restore(first)  # the index now holds `first`, not the last tree written
    tree, paths = box.snapshot_track_changed(second)
    assert paths == ["a.txt"] and box.read("a.txt").content == "a1"
    agrees_with_diff_tree(box, second, tree, paths)
    box.write("a.txt", "a3\n")
    box.snapshot_revert(first, ["a.txt"])
    after_revert, paths = box.snapshot_track_changed(tree)
    assert (after_revert, paths) == (tree, [])


def test_a_nested_repository_without_a_commit_does_not_break_tracking(box):
    base = box.snapshot_track()
    box.exec("mkdir -p crate && git -C crate init -q && echo fn > crate/main.rs && echo top > top.txt")
    _tree, paths = box.snapshot_track_changed(base)
    assert paths == ["top.txt"]


def test_bad_base_hashes_are_refused(box):
    with pytest.raises(SandboxError, match="not a tree hash"):
        box.snapshot_track_changed("HEAD; rm -rf /")


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def test_a_new_sandbox_gets_its_empty_snapshot_repo_before_its_first_track(box):
    def made() -> bool:  # `git init` writes HEAD before it makes objects/: both, or the init still runs
        return box.stat(f"{STATE}/HEAD") is not None and box.stat(f"{STATE}/objects") is not None

    deadline = time.monotonic() + 10
    while not made() and time.monotonic() < deadline:
        time.sleep(0.05)  # the agent makes it right after start, in the background
    assert made()
    # Nothing in it but (at most) git's empty tree, which the agent writes to know the index's tree.
    objects = box.exec(f"cd {STATE}/objects && find . -type f").output.split()
    assert objects in ([], [f"./{EMPTY_TREE[:2]}/{EMPTY_TREE[2:]}"])
    listed = box.exec(f"git --git-dir {STATE} ls-files | wc -l")
    assert listed.exit_code == 0 and listed.output.strip() == "0"


SPAWN_PROBE = r"""
import json, os, subprocess, sys
sys.path.insert(0, "/opt/hangar/agent")
spawned = []
class Recorded(subprocess.Popen):  # every process the agent starts, whichever module starts it
    def __init__(self, args, *a, **k):
        spawned.append(next(x for x in args[1:] if not x.startswith("-") and "/" not in x and "=" not in x))
        super().__init__(args, *a, **k)
subprocess.Popen = Recorded
import snapshots

os.makedirs("/workspace/probe")
repo = snapshots.Snapshots("/tmp/probe-git", "/workspace/probe")
report = {}

def step(name, fn):
    spawned.clear()
    result = fn()
    report[name] = spawned[:]
    return result

step("init", lambda: repo.init({}))
step("first, nothing written yet", lambda: repo.track_changed({"base": None}))
open("/workspace/probe/a.txt", "w").write("1")
first = step("first", lambda: repo.track_changed({"base": None}))["hash"]
step("unchanged", lambda: repo.track_changed({"base": first}))
open("/workspace/probe/a.txt", "w").write("2")
os.makedirs("/workspace/probe/new/dir")
open("/workspace/probe/new/dir/b.txt", "w").write("b")
open("/workspace/probe/.gitignore", "w").write("*.log\n")
open("/workspace/probe/x.log", "w").write("ignored")
second = step("changed", lambda: repo.track_changed({"base": first}))
open("/workspace/probe/a.txt", "w").write("3")
step("older base", lambda: repo.track_changed({"base": first}))
last = step("plain track, unchanged", repo.track)["hash"]
repo = snapshots.Snapshots("/tmp/probe-git", "/workspace/probe")  # the agent restarted
step("after a restart", lambda: repo.track_changed({"base": last}))
report["changed paths"] = second["paths"]
print(json.dumps(report))
"""


def test_a_track_starts_no_process_and_only_an_older_base_needs_git(box):
    box.write("/tmp/probe.py", SPAWN_PROBE)
    result = box.exec("python3 -S /tmp/probe.py")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "init": ["init"],  # at container start
        "first, nothing written yet": [],
        "first": [],
        "unchanged": [],
        "changed": [],  # the changed paths are what the scan saw change
        "older base": ["diff-tree"],
        "plain track, unchanged": [],
        "after a restart": [],  # the index was saved with the tree it held
        "changed paths": [".gitignore", "a.txt", "new/dir/b.txt"],
    }
