"""Helpers shared by the file tools: path resolution against the workspace, titles, diffs,
description loading. Paths the model gives are absolute inside the container or relative to
the workspace (`/workspace`), as OpenCode resolves them against the project directory."""

from __future__ import annotations

import difflib
import posixpath
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from hangar.engine.tools.base import ToolContext
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


DIFF_CONTEXT = 3
DIFF_MAX_CELLS = 4_000_000  # changed lines before x after: beyond, one hunk replaces the changed region


def ask_external(ctx: ToolContext, path: str, *, is_dir: bool = False) -> None:
    """A path outside the workspace needs `external_directory` (OpenCode asks it of every file tool),
    for its folder: `<folder>/*` is both the pattern and what "always" remembers."""
    if path == WORKSPACE or path.startswith(WORKSPACE + "/"):
        return
    folder = path if is_dir else posixpath.dirname(path)
    glob = posixpath.join(folder, "*")
    ctx.ask("external_directory", [glob], [glob], {"filepath": path, "parentDir": folder})


def unified_diff(path: str, before: str, after: str) -> str:
    """difflib's unified diff, bounded: the lines both sides share at the start and end are set aside
    first (an edit changes a small region of a large file: only that region is compared), and a changed
    region too large for difflib's matcher (quadratic in the worst case) becomes a single hunk that
    removes it all and adds the new lines."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    prefix, limit = 0, min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    lo = max(0, prefix - DIFF_CONTEXT)
    keep = max(0, suffix - DIFF_CONTEXT)
    a_mid, b_mid = a[lo : len(a) - keep], b[lo : len(b) - keep]
    if (len(a_mid) - DIFF_CONTEXT) * (len(b_mid) - DIFF_CONTEXT) <= DIFF_MAX_CELLS:
        lines = _shifted(difflib.unified_diff(a_mid, b_mid, fromfile=path, tofile=path), lo)
    else:
        lines = _one_hunk(path, a, b, prefix, suffix, lo, keep)
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _shifted(lines: Iterable[str], offset: int) -> Iterator[str]:
    """Hunk headers of a diff of a slice starting at line `offset`, renumbered for the whole file."""
    for line in lines:
        if offset and line.startswith("@@ "):
            old, new = line.split(" ")[1:3]
            line = f"@@ {_shift(old, offset)} {_shift(new, offset)} @@\n"
        yield line


def _shift(span: str, offset: int) -> str:
    start, comma, length = span[1:].partition(",")
    return f"{span[0]}{int(start) + offset}{comma}{length}"


def _one_hunk(
    path: str, a: list[str], b: list[str], prefix: int, suffix: int, lo: int, keep: int
) -> Iterator[str]:
    yield f"--- {path}\n"
    yield f"+++ {path}\n"
    old_len, new_len = len(a) - lo - keep, len(b) - lo - keep
    yield f"@@ -{_range(lo, old_len)} +{_range(lo, new_len)} @@\n"
    yield from (" " + line for line in a[lo:prefix])
    yield from ("-" + line for line in a[prefix : len(a) - suffix])
    yield from ("+" + line for line in b[prefix : len(b) - suffix])
    yield from (" " + line for line in a[len(a) - suffix : len(a) - keep])


def _range(start: int, length: int) -> str:
    """difflib's unified range: 1-based start, `,length` unless 1, and the line before when empty."""
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def filediff(
    path: str, before: str, after: str, status: str = "modified", patch: str | None = None
) -> dict[str, Any]:
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


class _PathLock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock, self.users = threading.Lock(), 0


_locks: dict[tuple[str, str], _PathLock] = {}
_locks_guard = threading.Lock()


@contextmanager
def file_lock(session_id: str, path: str) -> Iterator[None]:
    """One writer per file per session: batch may run two edits of the same file at once, and
    read-modify-write must not interleave (OpenCode's FileTime.withLock). One runner per session
    means a process-local lock is enough. An entry lives only while someone holds or waits for it:
    a worker serving many sessions and paths does not keep a lock for every file ever written."""
    key = (session_id, path)
    with _locks_guard:
        entry = _locks.get(key)
        if entry is None:
            entry = _locks[key] = _PathLock()
        entry.users += 1
    try:
        with entry.lock:
            yield
    finally:
        with _locks_guard:
            entry.users -= 1
            if not entry.users:
                del _locks[key]
