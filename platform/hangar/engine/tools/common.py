"""Helpers shared by the file tools: path resolution against the workspace, titles, diffs,
description loading. Paths the model gives are absolute inside the container or relative to
the workspace (`/workspace`), as OpenCode resolves them against the project directory."""

from __future__ import annotations

import difflib
import posixpath
import threading
from functools import cache
from pathlib import Path

from sandbox.protocol import WORKSPACE

DESCRIPTIONS = Path(__file__).with_name("descriptions")
EMPTY_PATH_VALUES = {"", "undefined", "null", "none"}  # models sometimes spell "omitted" this way


@cache
def description(name: str) -> str:
    """The tool's description for the model: a text file next to the code (prompts are data)."""
    text = (DESCRIPTIONS / f"{name}.txt").read_text(encoding="utf-8").strip()
    return text.replace("{workspace}", WORKSPACE)


def resolve(path: str | None, base: str = WORKSPACE) -> str:
    if path is None or path.strip().lower() in EMPTY_PATH_VALUES:
        return base
    path = path.strip()
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(base, path))


def relative(path: str) -> str:
    """Title form: workspace-relative when inside the workspace, else absolute."""
    if path == WORKSPACE:
        return "."
    if path.startswith(WORKSPACE + "/"):
        return path[len(WORKSPACE) + 1 :]
    return path


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=path,
        tofile=path,
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def filediff(path: str, before: str, after: str, status: str = "modified", patch: str | None = None) -> dict:
    """OpenCode's SnapshotFileDiff shape for tool metadata (file, patch, additions, deletions, status).
    Counts come from the unified diff itself (pass `patch` when the caller already made it)."""
    patch = unified_diff(path, before, after) if patch is None else patch
    lines = [line for line in patch.splitlines() if not line.startswith(("+++", "---"))]
    return {
        "file": relative(path),
        "patch": patch,
        "additions": sum(line.startswith("+") for line in lines),
        "deletions": sum(line.startswith("-") for line in lines),
        "status": status,
    }


_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


def file_lock(session_id: str, path: str) -> threading.Lock:
    """One writer per file per session: batch may run two edits of the same file at once, and
    read-modify-write must not interleave (OpenCode's FileTime.withLock). One runner per session
    means a process-local lock is enough."""
    with _locks_guard:
        return _locks.setdefault((session_id, path), threading.Lock())
