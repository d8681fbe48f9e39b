"""The agent's in-memory index (no git process per track) against git itself, the oracle, in a real
sandbox: random workspaces tracked both ways give the same trees and the same change lists; random
ignore patterns decide like `git check-ignore`; and the cases that matter one by one: renames,
ignored and formerly-ignored files, names git refuses, nested repositories, .gitattributes, a rewrite
within one clock tick, gc, and an agent restarted with or without its saved index."""

import json
import os
import subprocess

from tests.sandbox.conftest import TEST_LABEL
from tests.sandbox.test_snapshot_changes import agrees_with_diff_tree

STATE = "/home/hangar/.hangar/snapshot"

FUZZ = r'''
import os, random, shutil, subprocess, sys, time
sys.path.insert(0, "/opt/hangar/agent")
import snapshots

WS, OLD, NEW = "/tmp/fz/ws", "/tmp/fz/git-oracle", "/tmp/fz/git-new"
NAMES = ["a", "b", "c", "d1", "x", "keep.log", "f.txt", "g.o", "tmp", "build", "sub", "root.txt", "#hash",
         "a b", "\u00e9.txt", "z.c", "n", "[x]", "back\\slash"]
PATTERNS = ["*.log", "build/", "/root.txt", "a/**/b", "!keep.log", "**/tmp", "d?", "[abc]*.txt", "*.o", "x/",
            "sub/*.c", "!sub/", "\\#hash", "trailing  ", "a/**", "!*.txt", "*", "!a", "n/", "/a/b", "**/x/**",
            "[!a-c]", "*.[oc]", "sub", "!/sub/z.c", "# c", "", "b/", "\\[x]", "*\\\\*", "a/*/", "**/", "!**/n"]
BIG = 2 * 1024 * 1024


def git(gd, *args, input=None):
    return subprocess.run(["git", "--git-dir", gd, "--work-tree", WS, "-c", "core.autocrlf=false",
                           "-c", "core.symlinks=true", "-c", "core.quotepath=false", *args],
                          cwd=WS, input=input, capture_output=True)


def oracle_track(base):
    """The previous agent's algorithm, with git's own index: ls-files, the 2 MB cap, nested repos left
    out, add --all, write-tree. None when git fails (it does on some layouts: see the tests below)."""
    listed = git(OLD, "ls-files", "--modified", "--deleted", "--others", "--exclude-standard", "-z").stdout
    paths = []
    for rel in dict.fromkeys(filter(None, listed.split(b"\0"))):
        if rel.endswith(b"/"):
            continue
        try:
            if os.lstat(os.fsencode(WS) + b"/" + rel).st_size > BIG:
                continue
        except (FileNotFoundError, NotADirectoryError):
            pass
        paths.append(rel)
    if paths and git(OLD, "--literal-pathspecs", "add", "--all", "--pathspec-from-file=-",
                     "--pathspec-file-nul", input=b"\0".join(paths)).returncode:
        return None
    tree = git(OLD, "write-tree").stdout.decode().strip()
    changed = git(OLD, "diff-tree", "-r", "--name-only", "-z", base, tree).stdout if base else b""
    names = [p.decode("utf-8", "replace") for p in sorted(filter(None, changed.split(b"\0")))]
    return {"hash": tree, "paths": names}


def fresh():
    for gd in (OLD, NEW):
        shutil.rmtree(gd, ignore_errors=True)
    git(OLD, "init", "-q", "--template=")
    return snapshots.Snapshots(NEW, WS)


def run(seed, iterations):
    rnd = random.Random(seed)
    shutil.rmtree(WS, ignore_errors=True)
    os.makedirs(WS)
    new = fresh()

    def rpath(depth=None):
        return "/".join(rnd.choice(NAMES) for _ in range(1 + (rnd.randint(0, 3) if depth is None else depth)))

    def existing():
        out = []
        for root, dirs, files in os.walk(WS):
            out += [os.path.relpath(os.path.join(root, n), WS) for n in dirs + files]
        return out

    def write(rel, data):
        full = os.path.join(WS, rel)
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(data)
        except OSError:
            pass

    def mutate():
        k, ex = rnd.random(), existing()
        pick = os.path.join(WS, rnd.choice(ex)) if ex else None
        try:
            if rnd.random() < 0.06:  # an empty directory: git init may land in one that holds nothing
                os.makedirs(os.path.join(WS, rpath(rnd.randint(0, 1))), exist_ok=True)
                return
            if k < 0.35:
                write(rpath(), rnd.choice([b"1", b"2", b"hello\n", os.urandom(4)]))
            elif k < 0.45 and pick:
                shutil.rmtree(pick) if os.path.isdir(pick) and not os.path.islink(pick) else os.unlink(pick)
            elif k < 0.55:
                lines = [rnd.choice(PATTERNS) for _ in range(rnd.randint(0, 4))]
                where = rpath(rnd.randint(0, 1)) if rnd.random() < 0.5 else ""
                write(os.path.join(where, ".gitignore"), "\n".join(lines).encode() + b"\n" * rnd.randint(0, 1))
            elif k < 0.62 and pick and os.path.isfile(pick) and not os.path.islink(pick):
                os.chmod(pick, rnd.choice([0o644, 0o755]))
            elif k < 0.67:
                target = os.path.join(WS, rpath())
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(rnd.choice(["a", "../x", "nowhere"]), target)
            elif k < 0.70:
                target = os.path.join(WS, rpath(rnd.randint(0, 1)))
                if not os.path.lexists(target) or os.path.isdir(target):
                    subprocess.run(["git", "init", "-q", target], capture_output=True)
                    write(os.path.relpath(target, WS) + "/inner.txt", b"i")
            elif k < 0.75 and pick:
                os.rename(pick, os.path.join(WS, rpath()))
            elif k < 0.82 and pick:
                os.utime(pick, follow_symlinks=False)
            elif k < 0.85:
                write(rpath(rnd.randint(0, 1)), b"\0" * (BIG + rnd.choice([-1, 0, 1])))
            elif k < 0.88 and pick and os.path.isfile(pick) and not os.path.islink(pick):
                with open(pick, "rb") as f:
                    write(os.path.relpath(pick, WS), bytes(reversed(f.read())))  # same size, same instant
            elif k < 0.90:
                write(".git/info/x", b"x")  # the project's own repository is never snapshotted
            else:
                write(rpath(), b"same")
        except OSError:
            pass

    compared = oracle_failures = 0
    base_old = base_new = None
    for _ in range(iterations):
        for _ in range(rnd.randint(1, 4)):
            mutate()
        if rnd.random() < 0.3:
            time.sleep(0.06)  # let stats age past the racy window
        old = oracle_track(base_old)
        if old is None:
            oracle_failures += 1
            new, base_old, base_new = fresh(), None, None  # both start over from nothing held
            continue
        got = new.track_changed({"base": base_new})
        if (got["hash"], got["paths"]) != (old["hash"], old["paths"]):
            return {"seed": seed, "git": old, "agent": got, "files": sorted(existing())}
        compared += 1
        base_old, base_new = old["hash"], got["hash"]
        if rnd.random() < 0.08:
            new = snapshots.Snapshots(NEW, WS)  # the agent restarted: it reloads its saved index
    return {"compared": compared, "oracle_failures": oracle_failures}


print(__import__("json").dumps([run(seed, int(sys.argv[2])) for seed in range(int(sys.argv[1]))]))
'''


def test_tracking_agrees_with_git_add_on_random_workspaces(box):
    box.write("/tmp/fuzz.py", FUZZ)
    result = box.exec("python3 -S /tmp/fuzz.py 4 150", timeout_s=110)
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert all("compared" in r for r in runs), runs
    assert sum(r["compared"] for r in runs) > 400


IGNORE_FUZZ = r"""
import json, os, random, subprocess, sys
sys.path.insert(0, "/opt/hangar/agent")
import gitrules

rnd = random.Random(7)
os.makedirs("/tmp/ig/ws/d/e", exist_ok=True)
os.chdir("/tmp/ig/ws")
subprocess.run(["git", "init", "-q"], check=True)
atoms = ["a", "b", "d", "e", "*", "**", "?", "/", "[a-c]", "[!b]", "[]a]", "[[:alpha:]]", "\\*", ".", "x",
         "[^d]", "[[:digit:][:upper:]]", "[a-", "\\", "!", " ", "**/", "/**"]
paths = ["a", "b", "ab", "a/b", "d", "d/e", "d/e/a", "d/x", "x/a/b", "a.b", "*", "e", "d/e/b", "1", "A", "ba"]
dirs = {"d", "d/e"}
mismatches = []
for _ in range(600):
    pattern = "".join(rnd.choice(atoms) for _ in range(rnd.randint(1, 5)))
    with open(".gitignore", "w") as f:
        f.write(pattern + "\n")
    out = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], input="\0".join(paths).encode(),
                         capture_output=True).stdout
    git_says = set(filter(None, out.decode().split("\0")))
    patterns = gitrules.parse(pattern.encode() + b"\n", b"")

    def ours(path):  # a path under an excluded directory is excluded too (git never lists it)
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if gitrules.excluded([patterns], sub.encode(), parts[i - 1].encode(), i < len(parts) or sub in dirs):
                return True
        return False

    for path in paths:
        if ours(path) != (path in git_says):
            mismatches.append([pattern, path, path in git_says])
print(json.dumps(mismatches[:20]))
"""


def test_ignore_patterns_decide_like_git_check_ignore(box):
    box.write("/tmp/ignore_fuzz.py", IGNORE_FUZZ)
    result = box.exec("python3 -S /tmp/ignore_fuzz.py", timeout_s=110)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == []


def test_renames_and_ignore_rules_are_named_exactly(box):
    box.write(".gitignore", "*.log\nbuild/\n")
    box.write("old.txt", "content\n")
    box.write("keep.log", "tracked before it was ignored\n")
    box.write(".gitignore", "build/\n")
    base = box.snapshot_track()  # keep.log held now
    box.write(".gitignore", "*.log\nbuild/\n")  # ignored from here on, but held: its edits still count
    box.exec(
        "mv old.txt new.txt; echo more >> keep.log; echo x > fresh.log; mkdir -p build && echo o > build/out"
    )
    tree, paths = box.snapshot_track_changed(base)
    assert paths == [".gitignore", "keep.log", "new.txt", "old.txt"]
    agrees_with_diff_tree(box, base, tree, paths)
    box.write(".gitignore", "build/\n")  # fresh.log is no longer ignored: it is new now
    later, paths = box.snapshot_track_changed(tree)
    assert paths == [".gitignore", "fresh.log"]
    box.exec("rm keep.log")
    box.write(".gitignore", "*.log\nbuild/\n")
    box.write("keep.log", "back, but ignored now and no longer held\n")
    _, paths = box.snapshot_track_changed(later)
    assert paths == [".gitignore", "keep.log"]  # fresh.log is held now: ignoring it again changes nothing


def test_names_git_refuses_and_an_ignored_directory_replacing_a_file_do_not_break_tracking(box):
    # git lists `.GIT/x` and then fails the whole `add`; and a held file that became an ignored
    # directory made `add --all <it>` fail too. Both failed every later track.
    box.write("out.log", "a file first\n")
    base = box.snapshot_track()
    box.write(".gitignore", "*.log\n")
    box.exec(
        "rm out.log && mkdir out.log && echo x > out.log/inner; mkdir .GIT && echo y > .GIT/config; "
        "mkdir -p 'sub/git~1' && echo z > 'sub/git~1/x'; echo ok > fine.txt"
    )
    tree, paths = box.snapshot_track_changed(base)
    assert paths == [".gitignore", "fine.txt", "out.log"]
    agrees_with_diff_tree(box, base, tree, paths)


def test_a_nested_repository_that_holds_tracked_files_stays_tracked(box):
    box.write("lib/a.rs", "a\n")
    base = box.snapshot_track()
    box.exec("git -C lib init -q && echo b > lib/b.rs && git init -q other && echo c > other/c.rs")
    _tree, paths = box.snapshot_track_changed(base)
    assert paths == ["lib/b.rs"]  # as git: a directory it holds files in is walked; `other` is left out


def test_a_directory_holding_nothing_that_becomes_a_repository_is_left_out(box):
    # `git init sub` changes sub, not its parent: the check must not wait for the parent to change
    box.write(".gitignore", "*.log\n")
    box.exec("mkdir empty logs && echo x > logs/a.log")
    base = box.snapshot_track()
    box.exec(
        "git init -q empty && echo x > empty/x.txt && git init -q logs && echo y > logs/y.txt && echo z > z.txt"
    )
    _tree, paths = box.snapshot_track_changed(base)
    assert paths == ["z.txt"]  # as `git ls-files -o` lists `empty/` and `logs/`: repositories of their own


def test_gitattributes_conversions_store_what_git_add_stores(box):
    box.write(".gitattributes", "*.txt text eol=lf\n")
    box.write("crlf.txt", b"one\r\ntwo\r\n")
    box.write("raw.bin", b"one\r\ntwo\r\n")
    tree = box.snapshot_track()
    shown = box.exec(
        f"git --git-dir {STATE} cat-file -p {tree}:crlf.txt | od -c | head -2; "
        f"git --git-dir {STATE} cat-file -p {tree}:raw.bin | od -c | head -1"
    ).output
    assert "\\r" not in shown.split("\n")[0] and "\\r" in shown.split("\n")[-2]


PROBE_RACY = r"""
import json, sys
sys.path.insert(0, "/opt/hangar/agent")
import snapshots
repo = snapshots.Snapshots("/tmp/racy-git", "/workspace")
seen = []
base = repo.track()["hash"]
for i in range(200):  # the same size, rewritten right after a track: within one clock tick, often
    with open("/workspace/r.txt", "w") as f:
        f.write("%04d" % i)
    result = repo.track_changed({"base": base})
    seen.append(result["paths"] == ["r.txt"])
    base = result["hash"]
print(json.dumps(all(seen)))
"""


def test_a_same_size_rewrite_within_the_same_clock_tick_is_seen(box):
    box.write("/tmp/racy.py", PROBE_RACY)
    result = box.exec("python3 -S /tmp/racy.py")
    assert result.output.strip() == "true", result.output


def test_a_restarted_agent_names_what_changed_while_it_was_down(sandboxes, box):
    box.write("a.txt", "1\n")
    box.write("big/dir/b.txt", "2\n")
    base = box.snapshot_track()
    box.write("a.txt", "changed before the container stopped\n")
    sandboxes.hibernate(box.session_id)
    resumed = sandboxes.resume(box.session_id)
    tree, paths = resumed.snapshot_track_changed(base)
    assert paths == ["a.txt"]
    agrees_with_diff_tree(resumed, base, tree, paths)


def test_a_damaged_saved_index_falls_back_to_gits_and_stays_exact(sandboxes, box):
    box.write("a.txt", "1\n")
    box.write("b.txt", "2\n")
    base = box.snapshot_track()
    box.write("b.txt", "3\n")
    box.exec(f"head -c 100 /dev/urandom > {STATE}/hangar-index")
    sandboxes.hibernate(box.session_id)
    resumed = sandboxes.resume(box.session_id)
    tree, paths = resumed.snapshot_track_changed(base)
    assert paths == ["b.txt"]
    agrees_with_diff_tree(resumed, base, tree, paths)


def test_gc_packs_what_the_agent_wrote_and_keeps_the_latest_tree(box):
    box.write("a.txt", "1\n")
    first = box.snapshot_track()
    box.write("a.txt", "2\n")
    second = box.snapshot_track()
    box.snapshot_gc()
    check = box.exec(
        f"git --git-dir {STATE} fsck --no-dangling --strict 2>&1 && "
        f"git --git-dir {STATE} cat-file -t {second} && git --git-dir {STATE} count-objects -v"
    )
    assert check.exit_code == 0, check.output
    # the latest tree and its blob packed (the ref keeps them); older snapshots stay loose until they
    # are older than the prune window (their number is not this test's point: one xdist run counted 3
    # loose trees, not 2, for a sandbox that may have come from the warm pool)
    assert "\ntree\n" in check.output and "\nin-pack: 2\n" in check.output, check.output
    box.write("b.txt", "3\n")
    tree, paths = box.snapshot_track_changed(second)
    assert paths == ["b.txt"]
    assert box.snapshot_changed(first, tree) == ["a.txt", "b.txt"]


def test_ignore_files_outside_the_workspace_are_honoured_and_followed(box):
    box.exec("mkdir -p ~/.config/git && echo '*.tmp' > ~/.config/git/ignore")
    base = box.snapshot_track()
    box.exec("echo a > x.tmp; echo b > y.bak; echo c > z.txt")
    tree, paths = box.snapshot_track_changed(base)
    assert paths == ["y.bak", "z.txt"]  # the default core.excludesFile
    # A core.excludesFile of one's own replaces the default: x.tmp is no longer ignored, new .bak files are.
    box.exec(
        "echo '*.bak' > ~/custom-ignore && git config --global core.excludesFile '~/custom-ignore' "
        "&& echo d > w.bak"
    )
    later, paths = box.snapshot_track_changed(tree)
    assert paths == ["x.tmp"]
    box.exec(f"mkdir -p {STATE}/info && echo 'x.*' > {STATE}/info/exclude && echo e > x.new")
    _, paths = box.snapshot_track_changed(later)
    assert paths == []  # info/exclude of the snapshot repo counts too


def test_a_tree_thousands_of_levels_deep_is_tracked(box):
    # git handles paths up to PATH_MAX; the scan recurses once per level, on one of the agent's threads
    deep = "/".join(["d"] * 1800)
    assert box.exec(f"mkdir -p {deep} && touch {deep}/leaf").exit_code == 0
    tree, _paths = box.snapshot_track_changed(box.snapshot_track())
    listed = box.exec(f"git --git-dir {STATE} ls-tree -r --name-only {tree}").output.split()
    assert listed == [deep + "/leaf"]


def test_a_repo_kept_by_the_previous_agent_is_taken_over_from_gits_index(sandboxes, box):
    # The agent makes its repo in the background as it starts; a track waits for it (under load the git
    # commands below once came first and found no repo).
    box.snapshot_track()
    # The previous agent recorded what was held in git's own index (git add + write-tree).
    box.write("held.log", "held before *.log was ignored\n")
    box.write("a.txt", "1\n")
    git = f"git --git-dir {STATE} --work-tree /workspace"
    made = box.exec(
        f"{git} add --all && {git} write-tree && rm -f {STATE}/hangar-index {STATE}/hangar-index.log"
    )
    assert made.exit_code == 0, made.output
    base = made.output.strip()
    box.write(".gitignore", "*.log\n")
    box.write("held.log", "edited while ignored: still held, as git add would have it\n")
    sandboxes.hibernate(box.session_id)  # the agent restarts without a saved index of its own
    resumed = sandboxes.resume(box.session_id)
    tree, paths = resumed.snapshot_track_changed(base)
    assert paths == [".gitignore", "held.log"]
    agrees_with_diff_tree(resumed, base, tree, paths)


COARSE_PROBE = r"""
import json, os, sys, time
sys.path.insert(0, "/opt/hangar/agent")
import snapshots
os.makedirs("/w/ws")
repo = snapshots.Snapshots("/w/git", "/w/ws")
seen, coarse = [], True
base = repo.track()["hash"]
for i in range(12):  # same size, same second, a track in between: the stat looks the same each time
    with open("/w/ws/r.txt", "w") as f:
        f.write("%04d" % i)
    coarse = coarse and os.stat("/w/ws/r.txt").st_ctime_ns % 1_000_000_000 == 0
    time.sleep(0.07)  # rewrites a tick apart within one second: the case under test
    result = repo.track_changed({"base": base})
    seen.append(result["paths"] == ["r.txt"])
    base = result["hash"]
print(json.dumps({"coarse": coarse, "all_seen": all(seen)}))
"""


def test_rewrites_within_one_second_are_seen_on_a_filesystem_that_keeps_seconds(
    docker_client, image, tmp_path
):
    disk, mnt = tmp_path / "coarse.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(disk, "wb") as f:
        f.truncate(16 * 1024 * 1024)
    # 128-byte inodes: ext4 keeps whole seconds (what an older mke2fs.conf gives small filesystems)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", str(disk)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(disk), str(mnt)], check=True)
    try:
        os.chown(mnt, 1000, 1000)
        (mnt / "probe.py").write_text(COARSE_PROBE)
        out = docker_client.containers.run(
            image,
            ["python3", "-S", "/w/probe.py"],
            user="1000:1000",
            remove=True,
            network_mode="none",
            volumes={str(mnt): {"bind": "/w", "mode": "rw"}},
            labels=TEST_LABEL,
        )
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert json.loads(out) == {"coarse": True, "all_seen": True}
