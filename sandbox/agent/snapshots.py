"""Shadow-git snapshots (seed 003 "Snapshots: The Shadow Git Repo").

The git dir lives on the session's persistent volume but outside the workspace, so it survives
hibernate/resume and the project's own .git is never touched. Snapshot trees are never committed:
they are referenced by hash only, so `git gc --prune=<age>` bounds the repo by deleting snapshots
older than the prune window (OpenCode uses 7 days).

A track runs on every agent step that may have written files, so it runs no git process: the agent
keeps git's index in memory (worktree.py: what the snapshot holds, with each file's stat) and writes
blobs and trees itself (objects.py), under git's own rules for what is held (gitrules.py). An
unchanged workspace costs a stat per file; a changed file is read once. The change list of a track
is what the scan saw change, so naming the paths changed since the last tree costs nothing; against
an older tree it is one `diff-tree`. Everything that reads trees (diff, restore, revert, gc) is git.

The index is saved next to the repo (indexfile.py) after each track that changed it, so a restarted
agent knows what it held and which stats it trusted; without that file (or with a damaged one) it
starts from git's index file, as the agent before it kept it, and reads every file once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

from globalrules import GlobalRules
from indexfile import IndexFile
from objects import GitHasher, ObjectStore
from wire import BadRequest, OpError, arg
from worktree import Worktree

GC_EVERY_WRITES = 50
GC_PRUNE = os.environ.get("HANGAR_SNAPSHOT_PRUNE", "7.days.ago")
MAX_DIFF_TEXT = 256 * 1024
GIT = shutil.which("git") or "git"  # resolved once: saves a PATH walk per spawn
KEEP_REF = "refs/hangar/snapshot"  # the latest tree, so that gc never prunes what a track builds on


def _is_hash(value: str) -> bool:
    return 4 <= len(value) <= 64 and all(c in "0123456789abcdef" for c in value)


def _names(raw) -> list[str]:
    # Byte order is git's index (and diff-tree) order.
    return [p.decode("utf-8", "replace") for p in sorted(raw)]


def _tree_entries(out: bytes) -> list[tuple]:
    """(path, mode, id, None) of the blobs and symlinks in `ls-tree -r -z` ("mode type id\tpath") or
    `ls-files --stage -z` ("mode id stage\tpath") output."""
    entries = []
    for item in filter(None, out.split(b"\0")):
        info, _, path = item.partition(b"\t")
        fields = info.split(b" ")
        oid = fields[2] if fields[1] in (b"blob", b"tree", b"commit") else fields[1]
        mode = int(fields[0], 8)
        if mode in (0o100644, 0o100755, 0o120000):
            entries.append((path, mode, bytes.fromhex(oid.decode()), None))
    return entries


class Snapshots:
    def __init__(self, git_dir: str, worktree: str) -> None:
        self.git_dir = git_dir
        self.worktree = worktree
        self.lock = threading.Lock()  # one snapshot operation at a time per repo, like OpenCode
        self.writes = 0
        self._gc_pending = False
        self.argv = [
            GIT,
            "--git-dir",
            git_dir,
            "--work-tree",
            worktree,
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.longpaths=true",
            "-c",
            "core.symlinks=true",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.quotepath=false",
        ]
        self.hasher = GitHasher(self.argv, worktree)
        self.index = Worktree(
            worktree, ObjectStore(git_dir), self.hasher, os.path.join(git_dir, "hangar-clock")
        )
        self.rules = GlobalRules(git_dir, self.argv)
        self.saved = IndexFile(git_dir)
        self._loaded = False
        # The tree the index held when the last track returned (None: not known), and what changed
        # since then (path -> (before, after)): together, the change list against that tree.
        self._last: str | None = None
        self._pending: dict[bytes, tuple] = {}

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        proc = subprocess.run(
            [*self.argv, *args], cwd=self.worktree, input=input, capture_output=True, timeout=300
        )
        if check and proc.returncode != 0:
            name = next((a for a in args if not a.startswith("-")), args[0])
            raise OpError(f"git {name} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc.stdout

    def _ensure(self) -> None:
        """Make the repo if it is missing (a new volume, or deleted from inside the sandbox) and load
        the saved index once."""
        if not os.path.exists(os.path.join(self.git_dir, "HEAD")):
            os.makedirs(self.git_dir, exist_ok=True)
            # One process: a repo whose work tree is the workspace, without template files (sample
            # hooks, description) that the snapshot repo never uses.
            self._git("init", "--quiet", "--template=")
            self.index.reset([])  # whatever was held referred to objects of a repo that is gone
            self._last, self._pending, self._loaded = None, {}, True
            self.saved.generation = None
        if not self._loaded:
            self._load()
            self._loaded = True

    def _load(self) -> None:
        loaded = self.saved.load()
        if loaded is None and os.path.exists(os.path.join(self.git_dir, "index")):
            loaded = None, _tree_entries(self._git("ls-files", "--stage", "-z"))  # an older agent's index
        last, entries = loaded or (None, [])
        self.index.reset(entries)
        self._last, self._pending = last, {}

    def _save(self, paths) -> None:
        """Record what changed at `paths` (best effort: see indexfile.py). With changes pending (a
        revert), the index holds no tree of its own yet."""
        self.saved.save(
            self._last if not self._pending else None,
            [(path, self.index.get(path)) for path in paths],
            self.index.entries,
        )

    def init(self, args: dict | None = None) -> dict:
        """Make the repo and bring the index up to date now (the agent does it at start, the pool waits
        for it), so a session's first track does not pay for either. Idempotent."""
        with self.lock:
            self._ensure()
            self._scan()
            self.index.build()
        return {}

    def _hash(self, args: dict, name: str) -> str:
        value = arg(args, name, str)
        if not _is_hash(value):
            raise BadRequest(f"{name} is not a tree hash")
        return value

    # --- tracking -------------------------------------------------------------------------------

    def _scan(self) -> None:
        ignore_changed, attrs_changed = self.rules.refresh()
        if attrs_changed:
            self.hasher.close()  # git reads attributes once per process
        self.index.global_lists, self.index.global_attrs = self.rules.lists, self.rules.attributes
        for path, (before, after) in self.index.scan(force=ignore_changed).items():
            first = self._pending.get(path)
            self._pending[path] = (first[0] if first else before, after)

    def _track(self) -> tuple[str, list[bytes], str | None]:
        """Bring the index up to date and write its tree; returns (tree, paths that differ between
        `previous` and `tree`, previous): `previous` is the tree of the last track (None if not known)."""
        self._ensure()
        previous = self._last
        try:
            self._scan()
            tree = self.index.build()
        except BaseException:
            self._last, self._pending = None, {}  # half-applied: the next change list comes from git
            raise
        staged = [path for path, (before, after) in self._pending.items() if before != after]
        pending, self._last, self._pending = self._pending, tree, {}
        if pending or tree != previous:
            self._save(pending)
        if tree != previous:
            self.writes += 1
            if self.writes % GC_EVERY_WRITES == 0 and not self._gc_pending:
                # Off the caller's path (a gc takes 100+ ms): it runs while the session waits on its
                # model; an operation that comes first waits on the lock.
                self._gc_pending = True
                threading.Thread(target=self._gc_locked, name="snapshot-gc", daemon=True).start()
        return tree, staged, previous

    def track(self) -> dict:
        with self.lock:
            return {"hash": self._track()[0]}

    def track_changed(self, args: dict) -> dict:
        """Track, and name the paths whose content differs between tree `base` and the new tree. In the
        common case (`base` is the tree of the last track) that is what this track saw change;
        otherwise one `diff-tree`."""
        base = self._hash(args, "base") if args.get("base") is not None else None
        with self.lock:
            tree, staged, previous = self._track()
            if base is None or base == tree:
                paths = []
            elif base == previous:
                paths = _names(staged)
            else:
                paths = self._changed(base, tree)
        return {"hash": tree, "paths": paths}

    # --- reading --------------------------------------------------------------------------------

    def _gc(self) -> None:
        # Trees are referenced by no commit: the ref keeps the latest one (and what the next track
        # reuses from it) out of the prune; older snapshots age out as before.
        if self._last:
            self._git("update-ref", KEEP_REF, self._last, check=False)
        self._git("gc", "--quiet", f"--prune={GC_PRUNE}", check=False)

    def _gc_locked(self) -> None:
        with self.lock:
            try:
                self._gc()
            finally:
                self._gc_pending = False

    def gc(self, args: dict) -> dict:
        with self.lock:
            self._ensure()
            self._gc()
            return {}

    def _blob(self, tree: str, path: str) -> str:
        out = self._git("cat-file", "blob", f"{tree}:{path}", check=False)
        if b"\0" in out[:8000]:
            return ""  # binary content is not shown as text
        return out[:MAX_DIFF_TEXT].decode("utf-8", "replace")

    def _changed(self, before: str, after: str) -> list[str]:
        out = self._git("diff-tree", "-r", "--no-renames", "--name-only", "-z", before, after)
        return _names(list(filter(None, out.split(b"\0"))))

    def changed(self, args: dict) -> dict:
        """Paths that differ between two trees (OpenCode's `patch`): what a patch part records. One git
        process, no blob reads: the step loop needs only the names, `diff` gives the text."""
        before, after = self._hash(args, "from"), self._hash(args, "to")
        with self.lock:
            return {"paths": self._changed(before, after)}

    def diff(self, args: dict) -> dict:
        before = self._hash(args, "from")
        after = self._hash(args, "to") if args.get("to") else self.track()["hash"]
        with self.lock:
            numstat = self._git("diff-tree", "-r", "--no-renames", "--numstat", "-z", before, after)
            statuses = self._git("diff-tree", "-r", "--no-renames", "--name-status", "-z", before, after)
            kinds = {}
            fields = statuses.split(b"\0")
            for i in range(0, len(fields) - 1, 2):
                kinds[fields[i + 1].decode("utf-8", "replace")] = fields[i].decode()
            files = []
            for entry in filter(None, numstat.split(b"\0")):
                add, delete, path = entry.decode("utf-8", "replace").split("\t", 2)
                kind = kinds.get(path, "M")
                files.append(
                    {
                        "path": path,
                        "additions": int(add) if add.isdigit() else 0,
                        "deletions": int(delete) if delete.isdigit() else 0,
                        "status": {"A": "added", "D": "deleted"}.get(kind, "modified"),
                        "before": "" if kind == "A" else self._blob(before, path),
                        "after": "" if kind == "D" else self._blob(after, path),
                    }
                )
            return {"files": files}

    # --- writing the workspace back -------------------------------------------------------------

    def restore(self, args: dict) -> dict:
        """Whole-tree restore, as OpenCode does: read-tree + checkout-index -a -f. Files created
        after the snapshot are left in place (use revert with their paths to delete them)."""
        tree = self._hash(args, "hash")
        with self.lock:
            self._ensure()
            self._git("read-tree", tree)
            self._git("checkout-index", "-a", "-f")
            # git's index now holds `tree`: so does ours (every file is read again: checkout rewrote them)
            self.index.reset(_tree_entries(self._git("ls-tree", "-r", "-z", tree)))
            self._last, self._pending = tree, {}
            self.saved.generation = None  # a new base
            self._save(())
            return {}

    def revert(self, args: dict) -> dict:
        """Per file: take it from the tree, or delete it if the tree did not have it."""
        tree = self._hash(args, "hash")
        paths = arg(args, "paths", list)
        if not all(isinstance(p, str) and p for p in paths):
            raise BadRequest("paths must be non-empty strings")
        with self.lock:
            self._ensure()
            try:
                for path in paths:
                    # Normalise first: `a/../../etc/x` must not slip past the check below.
                    rel = os.path.relpath(os.path.normpath(os.path.join(self.worktree, path)), self.worktree)
                    if rel == ".." or rel.startswith("../"):
                        raise BadRequest(f"{path} is outside the workspace")
                    entries = _tree_entries(self._git("ls-tree", "-r", "-z", tree, "--", rel))
                    if entries:
                        self._git("checkout", tree, "--", rel)
                        for entry_path, mode, blob, _ in entries:  # git's index holds them now: so does ours
                            self.index.put(entry_path, mode, blob)
                    else:
                        full = os.path.join(self.worktree, rel)
                        if os.path.isfile(full) or os.path.islink(full):
                            os.unlink(full)
            finally:
                changes, self.index.changes = self.index.changes, {}
                for change_path, (before, after) in changes.items():
                    first = self._pending.get(change_path)
                    self._pending[change_path] = (first[0] if first else before, after)
                self._save(changes)
            return {}
