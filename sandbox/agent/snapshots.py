"""Shadow-git snapshots (seed 003 "Snapshots: The Shadow Git Repo").

The git dir lives on the session's persistent volume but outside the workspace, so it survives
hibernate/resume and the project's own .git is never touched. Trees are written with
`write-tree` and never committed: they are referenced by hash only, so `git gc --prune=<age>`
bounds the repo by deleting snapshots older than the prune window (OpenCode uses 7 days).
"""

from __future__ import annotations

import os
import subprocess
import threading

from wire import BadRequest, OpError, arg

MAX_FILE_BYTES = 2 * 1024 * 1024
GC_EVERY_TRACKS = 50
GC_PRUNE = os.environ.get("HANGAR_SNAPSHOT_PRUNE", "7.days.ago")
MAX_DIFF_TEXT = 256 * 1024


def _is_hash(value: str) -> bool:
    return 4 <= len(value) <= 64 and all(c in "0123456789abcdef" for c in value)


class Snapshots:
    def __init__(self, git_dir: str, worktree: str) -> None:
        self.git_dir = git_dir
        self.worktree = worktree
        self.lock = threading.Lock()  # one git operation at a time per repo, like OpenCode
        self.tracks = 0

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        proc = subprocess.run(
            ["git", "--git-dir", self.git_dir, "--work-tree", self.worktree,
             "-c", "core.autocrlf=false", "-c", "core.longpaths=true", "-c", "core.symlinks=true",
             "-c", "core.fsmonitor=false", "-c", "core.quotepath=false", *args],
            cwd=self.worktree, input=input, capture_output=True, timeout=300,
        )
        if check and proc.returncode != 0:
            raise OpError(f"git {args[0]} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc.stdout

    def _init(self) -> None:
        if not os.path.exists(os.path.join(self.git_dir, "HEAD")):
            os.makedirs(self.git_dir, exist_ok=True)
            subprocess.run(["git", "init", "--quiet", "--bare", self.git_dir], check=True, capture_output=True)
            self._git("config", "core.bare", "false")

    def _hash(self, args: dict, name: str) -> str:
        value = arg(args, name, str)
        if not _is_hash(value):
            raise BadRequest(f"{name} is not a tree hash")
        return value

    def track(self) -> dict:
        with self.lock:
            self._init()
            # One listing for modified, deleted and new (untracked, not ignored) paths: the same set as
            # `diff-files --name-only` + `ls-files --others`, one git process fewer per track.
            listed = self._git("ls-files", "--modified", "--deleted", "--others", "--exclude-standard", "-z")
            paths = []
            for rel in dict.fromkeys(filter(None, listed.split(b"\0"))):  # a deleted path is listed twice
                full = os.path.join(self.worktree.encode(), rel)
                try:
                    if os.lstat(full).st_size > MAX_FILE_BYTES:
                        continue  # huge files are not snapshotted (OpenCode's 2 MB rule)
                except FileNotFoundError:
                    pass  # a deletion: stage it
                paths.append(rel)
            if paths:
                self._git("add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul",
                          input=b"\0".join(paths))
            tree = self._git("write-tree").decode().strip()
            self.tracks += 1
            if self.tracks % GC_EVERY_TRACKS == 0:
                self._gc()
            return {"hash": tree}

    def _gc(self) -> None:
        self._git("gc", "--quiet", f"--prune={GC_PRUNE}", check=False)

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

    def changed(self, args: dict) -> dict:
        """Paths that differ between two trees (OpenCode's `patch`): what a patch part records. One git
        process, no blob reads: the step loop needs only the names, `diff` gives the text."""
        before, after = self._hash(args, "from"), self._hash(args, "to")
        with self.lock:
            out = self._git("diff-tree", "-r", "--no-renames", "--name-only", "-z", before, after)
        return {"paths": [p.decode("utf-8", "replace") for p in filter(None, out.split(b"\0"))]}

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
