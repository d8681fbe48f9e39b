"""Shadow-git snapshots (seed 003 "Snapshots: The Shadow Git Repo").

The git dir lives on the session's persistent volume but outside the workspace, so it survives
hibernate/resume and the project's own .git is never touched. Trees are written with
`write-tree` and never committed: they are referenced by hash only, so `git gc --prune=<age>`
bounds the repo by deleting snapshots older than the prune window (OpenCode uses 7 days).

A track runs on every agent step, so it spawns as few git processes as it safely can (each costs
~2-5 ms on a small machine): one listing (`ls-files`), then `add` and `write-tree` only when the
listing found something. `add --verbose` names exactly the paths whose content or mode it changed
(git compares content, so a file touched without a change is not named), and when the index held
the tree we wrote last, those are precisely the paths that differ from it: no `diff-tree` needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

from wire import BadRequest, OpError, arg

MAX_FILE_BYTES = 2 * 1024 * 1024
GC_EVERY_WRITES = 50
GC_PRUNE = os.environ.get("HANGAR_SNAPSHOT_PRUNE", "7.days.ago")
MAX_DIFF_TEXT = 256 * 1024
GIT = shutil.which("git") or "git"  # resolved once: saves a PATH walk per spawn
LISTING = ("ls-files", "--modified", "--deleted", "--others", "--exclude-standard", "-z")


def _is_hash(value: str) -> bool:
    return 4 <= len(value) <= 64 and all(c in "0123456789abcdef" for c in value)


def _names(raw: list[bytes]) -> list[str]:
    # Byte order is git's index (and diff-tree) order.
    return [p.decode("utf-8", "replace") for p in sorted(raw)]


def _verbose_paths(out: bytes) -> list[bytes] | None:
    """Paths from `git add --verbose` ("add 'p'" / "remove 'p'" lines), None if a line is not one."""
    paths = []
    for line in filter(None, out.split(b"\n")):
        if line.startswith(b"add '") and line.endswith(b"'"):
            paths.append(line[5:-1])
        elif line.startswith(b"remove '") and line.endswith(b"'"):
            paths.append(line[8:-1])
        else:
            return None
    return paths


class Snapshots:
    def __init__(self, git_dir: str, worktree: str) -> None:
        self.git_dir = git_dir
        self.worktree = worktree
        self.lock = threading.Lock()  # one git operation at a time per repo, like OpenCode
        self.writes = 0
        self._gc_pending = False
        # (tree, mark of the index right after we wrote that tree): while the index keeps that mark,
        # it holds exactly that tree. Memory only: after a restart the first track writes the tree.
        self._last: tuple[str, bytes | None] | None = None

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        proc = subprocess.run(
            [GIT, "--git-dir", self.git_dir, "--work-tree", self.worktree,
             "-c", "core.autocrlf=false", "-c", "core.longpaths=true", "-c", "core.symlinks=true",
             "-c", "core.fsmonitor=false", "-c", "core.quotepath=false", *args],
            cwd=self.worktree, input=input, capture_output=True, timeout=300,
        )
        if check and proc.returncode != 0:
            name = next((a for a in args if not a.startswith("-")), args[0])
            raise OpError(f"git {name} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc.stdout

    def _init(self) -> None:
        if not os.path.exists(os.path.join(self.git_dir, "HEAD")):
            os.makedirs(self.git_dir, exist_ok=True)
            # One process: a non-bare repo whose work tree is the workspace, without template files
            # (sample hooks, description) that the snapshot repo never uses.
            self._git("init", "--quiet", "--template=")

    def init(self, args: dict | None = None) -> dict:
        """Create the repo now (the agent does it at start, the pool waits for it), so a session's
        first track does not pay for it. Idempotent."""
        with self.lock:
            self._init()
            if self._last is None:
                # Remember the tree the index holds now, so the session's first track can tell "nothing
                # changed" without a write-tree (one git process instead of two in its first step).
                self._last = (self._git("write-tree").decode().strip(), self._index_mark())
        return {}

    def _hash(self, args: dict, name: str) -> str:
        value = arg(args, name, str)
        if not _is_hash(value):
            raise BadRequest(f"{name} is not a tree hash")
        return value

    # --- tracking -------------------------------------------------------------------------------

    def _index_mark(self) -> bytes | None:
        """The index file's trailing checksum (a SHA over the whole file): an equal mark means a
        byte-identical index. b"" when there is no index yet; None when unknown (index.skipHash
        writes a zero checksum)."""
        try:
            with open(os.path.join(self.git_dir, "index"), "rb") as f:
                f.seek(-20, os.SEEK_END)
                mark = f.read(20)
        except FileNotFoundError:
            return b""
        except OSError:
            return None
        return mark if len(mark) == 20 and mark.strip(b"\0") else None

    def _candidates(self) -> list[bytes]:
        """Modified, deleted and new (untracked, not ignored) paths, in one listing, minus files over
        the size cap (OpenCode's 2 MB rule) and nested repositories."""
        listed = self._git(*LISTING)
        paths = []
        for rel in dict.fromkeys(filter(None, listed.split(b"\0"))):  # a deleted path is listed twice
            if rel.endswith(b"/"):
                # A nested repository (`cargo new`, a clone): a gitlink would record only its commit,
                # and one without a commit makes `git add` fail the whole track.
                continue
            try:
                if os.lstat(os.path.join(self.worktree.encode(), rel)).st_size > MAX_FILE_BYTES:
                    continue
            except (FileNotFoundError, NotADirectoryError):
                pass  # a deletion (its directory may be a file now): stage it
            paths.append(rel)
        return paths

    def _stage(self) -> list[bytes] | None:
        """Stage what changed; returns the paths whose index entry changed (None if not known)."""
        paths = self._candidates()
        if not paths:
            return []
        # Literal: the listing gives real names, never patterns.
        out = self._git("--literal-pathspecs", "add", "--verbose", "--all", "--pathspec-from-file=-",
                        "--pathspec-file-nul", input=b"\0".join(paths))
        if any(b"\n" in p for p in paths):
            return None  # a newline in a name makes the verbose lines ambiguous
        return _verbose_paths(out)

    def _track(self) -> tuple[str, list[bytes] | None, str | None]:
        """Stage the workspace and return (tree, staged, previous): `previous` is the tree the index
        held before (None if not known) and `staged` the paths that differ between it and `tree`."""
        self._init()
        last = self._last
        previous = last[0] if last and last[1] is not None and self._index_mark() == last[1] else None
        staged = self._stage()
        if previous is not None and staged == []:
            tree = previous  # nothing staged and the index still holds that tree: no write-tree
        else:
            tree = self._git("write-tree").decode().strip()
        self._last = (tree, self._index_mark())
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
        common case (`base` is the tree written last) that is what this track staged; otherwise one
        `diff-tree`."""
        base = self._hash(args, "base") if args.get("base") is not None else None
        with self.lock:
            tree, staged, previous = self._track()
            if base is None or base == tree:
                paths = []
            elif base == previous and staged is not None:
                paths = _names(staged)
            else:
                paths = self._changed(base, tree)
        return {"hash": tree, "paths": paths}

    # --- reading --------------------------------------------------------------------------------

    def _gc(self) -> None:
        self._git("gc", "--quiet", f"--prune={GC_PRUNE}", check=False)
        # The index's cache-tree keeps the last tree reachable; should it be gone anyway, the next
        # track must write it again rather than hand out a pruned hash.
        if self._last and not self._tree_exists(self._last[0]):
            self._last = None

    def _tree_exists(self, tree: str) -> bool:
        proc = subprocess.run([GIT, "--git-dir", self.git_dir, "cat-file", "-e", f"{tree}^{{tree}}"],
                              capture_output=True, timeout=60)
        return proc.returncode == 0

    def _gc_locked(self) -> None:
        with self.lock:
            try:
                self._gc()
            finally:
                self._gc_pending = False

    def gc(self, args: dict) -> dict:
        with self.lock:
            self._init()
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
                files.append({
                    "path": path,
                    "additions": int(add) if add.isdigit() else 0,
                    "deletions": int(delete) if delete.isdigit() else 0,
                    "status": {"A": "added", "D": "deleted"}.get(kind, "modified"),
                    "before": "" if kind == "A" else self._blob(before, path),
                    "after": "" if kind == "D" else self._blob(after, path),
                })
            return {"files": files}

    # --- writing the workspace back -------------------------------------------------------------

    def restore(self, args: dict) -> dict:
        """Whole-tree restore, as OpenCode does: read-tree + checkout-index -a -f. Files created
        after the snapshot are left in place (use revert with their paths to delete them)."""
        tree = self._hash(args, "hash")
        with self.lock:
            self._init()
            self._git("read-tree", tree)
            self._git("checkout-index", "-a", "-f")
            return {}

    def revert(self, args: dict) -> dict:
        """Per file: take it from the tree, or delete it if the tree did not have it."""
        tree = self._hash(args, "hash")
        paths = arg(args, "paths", list)
        if not all(isinstance(p, str) and p for p in paths):
            raise BadRequest("paths must be non-empty strings")
        with self.lock:
            self._init()
            for path in paths:
                # Normalise first: `a/../../etc/x` must not slip past the check below.
                rel = os.path.relpath(os.path.normpath(os.path.join(self.worktree, path)), self.worktree)
                if rel == ".." or rel.startswith("../"):
                    raise BadRequest(f"{path} is outside the workspace")
                if self._git("ls-tree", tree, "--", rel).strip():
                    self._git("checkout", tree, "--", rel)
                else:
                    full = os.path.join(self.worktree, rel)
                    if os.path.isfile(full) or os.path.islink(full):
                        os.unlink(full)
            return {}
