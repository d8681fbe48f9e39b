"""A Sandbox-protocol implementation over a local directory, for the tools' pure-logic tests and the loop's
fast tier (tests/engine/fast).

Container paths map under `root`: `/workspace/a.py` is `root/workspace/a.py`, `/tmp/x` is
`root/tmp/x`. It follows the in-container agent's rules closely enough for the tools (read window,
binary detection, 100-result caps); every tool is also tested against the real Docker sandbox.
"""

from __future__ import annotations

import fnmatch
import glob as globlib
import hashlib
import os
import posixpath
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from sandbox.protocol import (
    WORKSPACE,
    ExecResult,
    FileDiff,
    FileNotFound,
    FileStat,
    GrepMatch,
    ReadResult,
    SandboxError,
)

LIMIT = 100
SKIP_DIRS = {"node_modules", ".git", "__pycache__", ".venv", "dist", "build"}


class LocalSandbox:
    def __init__(self, root: Path, session_id: str = "local") -> None:
        self.root = root
        self.session_id = session_id
        (root / "workspace").mkdir(parents=True, exist_ok=True)
        self._trees: dict[str, dict[str, str]] = {}  # snapshot hash → {workspace path: content hash}
        self._blobs: dict[str, bytes] = {}  # content hash → content

    def host(self, path: str) -> Path:
        path = path if path.startswith("/") else posixpath.join(WORKSPACE, path)
        return self.root / posixpath.normpath(path).lstrip("/")

    def container(self, host_path: Path | str) -> str:
        return "/" + str(Path(host_path).relative_to(self.root))

    def exec(
        self,
        command,
        *,
        cwd=None,
        env=None,
        timeout_s=None,
        on_output=None,
        cancel=None,
        full_output_path=None,
    ) -> ExecResult:
        # Keeps the whole output (no cap), so it never needs `full_output_path`.
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.host(cwd or WORKSPACE),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        chunks: list[str] = []

        def pump() -> None:
            for raw in iter(lambda: proc.stdout.read1(4096), b""):
                text = raw.decode("utf-8", "replace")
                chunks.append(text)
                if on_output:
                    on_output(text)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout_s if timeout_s else None
        status = "exited"
        while proc.poll() is None:
            if cancel is not None and cancel.is_set():
                status = "cancelled"
            elif deadline is not None and time.monotonic() > deadline:
                status = "timeout"
            if status != "exited":
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
        proc.wait()
        reader.join(timeout=5)
        return ExecResult(status, proc.returncode if status == "exited" else None, "".join(chunks))

    def read(self, path: str, *, offset: int = 0, limit: int = 2000) -> ReadResult:
        target = self.host(path)
        if not target.exists():
            raise FileNotFound(path)
        data = target.read_bytes()
        if b"\0" in data[:4096]:
            return ReadResult("", 0, offset, False, binary=True)
        lines = data.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        window, size = [], 0
        for line in lines[offset : offset + limit]:
            line = line if len(line) <= 2000 else line[:2000] + "..."
            size += len(line.encode()) + 1
            if size > 50 * 1024 and window:
                break
            window.append(line)
        return ReadResult("\n".join(window), len(lines), offset, offset + len(window) < len(lines))

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        target = self.host(path)
        if not target.is_file():
            raise FileNotFound(path)
        if max_bytes is not None and target.stat().st_size > max_bytes:
            raise SandboxError(f"file is too large to read whole: {target.stat().st_size} bytes")
        return target.read_bytes()

    def write(self, path: str, content) -> None:
        target = self.host(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)

    def stat(self, path: str) -> FileStat | None:
        target = self.host(path)
        if not target.exists():
            return None
        st = target.stat()
        return FileStat(path, "dir" if target.is_dir() else "file", st.st_size, st.st_mtime)

    def _files(self, root: Path, ignore: list[str] | None = None) -> list[str]:
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in filenames:
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if not any(fnmatch.fnmatch(rel, p) for p in ignore or []):
                    found.append(rel)
        return sorted(found)

    def list(self, path: str = WORKSPACE, *, ignore=None):
        root = self.host(path)
        if not root.is_dir():
            raise FileNotFound(path)
        files = self._files(root, ignore)
        shown = files[:LIMIT]
        entries = set(shown)
        for f in shown:
            parts = f.split("/")[:-1]
            entries.update("/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1))
        return sorted(entries), len(files) > LIMIT

    def glob(self, pattern: str, path: str = WORKSPACE):
        root = self.host(path)
        if not root.is_dir():
            raise FileNotFound(path)
        found = [
            root / f for f in globlib.glob(pattern, root_dir=root, recursive=True) if (root / f).is_file()
        ]
        found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        return [self.container(p) for p in found[:LIMIT]], len(found) > LIMIT

    def grep(self, pattern: str, path: str = WORKSPACE, *, include=None):
        root = self.host(path)
        regex = re.compile(pattern)
        matches = []
        for rel in self._files(root):
            if include and not fnmatch.fnmatch(os.path.basename(rel), include):
                continue
            for number, line in enumerate((root / rel).read_text(errors="replace").split("\n"), 1):
                if regex.search(line):
                    matches.append(GrepMatch(self.container(root / rel), number, line))
        return matches[:LIMIT], len(matches) > LIMIT

    def mkdir(self, path: str) -> None:
        self.host(path).mkdir(parents=True, exist_ok=True)

    def remove(self, path: str) -> None:
        target = self.host(path)
        shutil.rmtree(target) if target.is_dir() else target.unlink()

    def move(self, src: str, dst: str) -> None:
        self.host(dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(self.host(src), self.host(dst))

    def snapshot_track(self) -> str:
        """A hash of the workspace's files and contents (the real sandbox's is a git tree)."""
        workspace = self.root / "workspace"
        tree = {}
        for rel in self._files(workspace):
            content = (workspace / rel).read_bytes()
            tree[rel] = hashlib.sha1(content).hexdigest()
            self._blobs[tree[rel]] = content
        key = hashlib.sha1(repr(sorted(tree.items())).encode()).hexdigest()
        self._trees[key] = tree
        return key

    def snapshot_track_changed(self, base):
        end = self.snapshot_track()
        old, new = self._trees.get(base, {}) if base else {}, self._trees[end]
        return end, sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))

    def snapshot_diff(self, from_hash, to_hash=None):
        old, new = self._trees[from_hash], self._trees[to_hash or self.snapshot_track()]
        diffs = []
        for path in sorted(old.keys() | new.keys()):
            if old.get(path) == new.get(path):
                continue
            before = self._blobs[old[path]].decode() if path in old else ""
            after = self._blobs[new[path]].decode() if path in new else ""
            a, b = before.splitlines(), after.splitlines()
            status = "added" if path not in old else "deleted" if path not in new else "modified"
            diffs.append(
                FileDiff(
                    path, before, after, len(b) - len(set(a) & set(b)), len(a) - len(set(a) & set(b)), status
                )
            )
        return diffs

    def snapshot_changed(self, from_hash, to_hash):
        raise NotImplementedError

    def snapshot_restore(self, tree_hash) -> None:
        raise NotImplementedError

    def snapshot_revert(self, tree_hash, paths) -> None:
        raise NotImplementedError

    # No language servers here: the tools' diagnostics are tested against the real sandbox.
    def lsp_touch(self, path, *, wait_ms=3000, mode="auto") -> dict:
        return {}

    def lsp_query(self, query, path=None, *, line=0, character=0, text=""):
        return None

    def lsp_status(self) -> list:
        return []
