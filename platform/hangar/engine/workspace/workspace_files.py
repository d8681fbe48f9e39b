"""The session's files as the web app browses them: one directory's entries and one file's content, read
inside the session's sandbox (so a symlink resolves in the container, never on the host). Paths are the
workspace's: relative, or absolute under /workspace; anything that leaves it is refused. Bounded: a
directory answers at most MAX_ENTRIES entries, a file at most MAX_FILE_BYTES, and a file holding a NUL
byte or text that is not UTF-8 is told as binary, without its bytes.

These run in the web process, made harmless there (hangar.engine.workspace.web_sandbox says how and why): only a
running sandbox is read (a member's read asks a worker to start one), within per-process and per-org
bounds and a total deadline, with no database connection held meanwhile."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hangar.accounts.actors import Actor
from hangar.conversations.models import Session
from hangar.engine.workspace.web_sandbox import SandboxNotRunning, Slot, WebSandboxBusy, running_box, web_slot
from sandbox.protocol import WORKSPACE, Sandbox, SandboxError, SandboxUnavailable

MAX_ENTRIES = 500
MAX_FILE_BYTES = 1 << 20
MAX_PATH_CHARS = 4096


class FileError(Exception):
    """What the user is told; `status` is the HTTP status an edge answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Entry:
    name: str
    path: str  # relative to the workspace
    type: str  # file | directory


def workspace_path(path: str) -> str:
    """`path` as an absolute path inside the workspace; FileError when it leaves it."""
    if len(path) > MAX_PATH_CHARS or "\x00" in path:
        raise FileError("Not a valid path.")
    path = path.strip() or "."
    full = posixpath.normpath(path if path.startswith("/") else posixpath.join(WORKSPACE, path))
    if full != WORKSPACE and not full.startswith(WORKSPACE + "/"):
        raise FileError("The path is outside the workspace.")
    return full


def _relative(full: str) -> str:
    return posixpath.relpath(full, WORKSPACE) if full != WORKSPACE else ""


def workspace_relative(path: str) -> str:
    """`path` as the workspace names it ("" for its root)."""
    return _relative(workspace_path(path))


@contextmanager
def reading(session: Session, actor: Actor | None) -> Iterator[tuple[Sandbox, Slot]]:
    """The session's running sandbox for one request's reads, within the web tier's bounds (FileError 429)
    and deadline (`Slot.left`). Never started here (FileError 409): someone who may drive the session (a
    member) has a worker asked to start it (resumed if hibernated, its workspace prepared); a viewer's
    read asks nothing: a read-only role never makes the platform create, resume or prepare anything."""
    may_start = actor is None or _may_start(actor, session)  # before the slot: it reads the database
    try:
        with web_slot(session.org_id) as slot:
            yield running_box(session.pk, may_start=may_start), slot
    except WebSandboxBusy as exc:
        raise FileError(str(exc), 429) from None
    except SandboxNotRunning as exc:
        raise FileError(str(exc), 409) from None
    except SandboxUnavailable:
        # The container runs but its agent does not answer yet (a start or resume a moment ago: it binds its
        # relay socket after Docker says "running") or no more: try again, as while it starts.
        raise FileError("The session's sandbox is starting: try again in a moment.", 409) from None
    except TimeoutError as exc:
        raise FileError(str(exc), 504) from None


def _may_start(actor: Actor, session: Session) -> bool:
    from hangar.accounts.models import Role
    from hangar.accounts.selectors import membership_for

    if actor.user is None:
        return True  # a system or integration actor, scoped to the org by its edge
    membership = membership_for(actor.user, session.org_id)
    return membership is not None and membership.has_role(Role.MEMBER)


def list_dir(session: Session, path: str = "", *, actor: Actor | None) -> tuple[list[Entry], bool]:
    """The directory's entries, directories first, then by name; True when there were more."""
    full = workspace_path(path)
    with reading(session, actor) as (box, slot):
        found = box.stat(full)
        if found is None:
            raise FileError("No such directory.", 404)
        if found.type != "dir":
            raise FileError("Not a directory.")
        # find prints type and name NUL-separated (any byte may be in a name); symlinks are not followed.
        listing = box.exec(
            f"find {shlex.quote(full)} -mindepth 1 -maxdepth 1 -printf '%y/%f\\0'"
            f" | head -z -n {MAX_ENTRIES + 1}",
            timeout_s=slot.left(20),
        )
    if listing.status != "exited":
        raise FileError("Listing the directory took too long.", 504)
    entries = []
    for item in listing.output.split("\0"):
        kind, _, name = item.partition("/")
        if not name or name == ".git":
            continue
        child = posixpath.join(full, name)
        entries.append(Entry(name, _relative(child), "directory" if kind == "d" else "file"))
    entries.sort(key=lambda e: (e.type != "directory", e.name.lower()))
    return entries[:MAX_ENTRIES], len(entries) > MAX_ENTRIES


MAX_FOUND = 200


def find_paths(
    session: Session, query: str, kind: str | None = None, limit: int = 50, *, actor: Actor | None
) -> list[str]:
    """Workspace paths whose text holds `query` (case-insensitive): files (rg lists them, .gitignore
    honoured) and their folders (with a trailing "/"); `kind` "file" or "directory" keeps one kind. Those
    whose own name holds it come first, then the shorter."""
    command = "rg --files --hidden --no-require-git --glob '!.git/' | head -n 20000"
    try:
        with reading(session, actor) as (box, slot):
            result = box.exec(command, cwd=WORKSPACE, timeout_s=slot.left(20))
    except SandboxError as exc:
        raise FileError(f"The search failed: {exc}", 503) from None
    files = [f for f in result.output.splitlines() if f]
    dirs = sorted({posixpath.dirname(f) + "/" for f in files if posixpath.dirname(f)})
    pool = files if kind == "file" else dirs if kind == "directory" else [*dirs, *files]
    needle = query.lower()
    found = [p for p in pool if needle in p.lower()]
    found.sort(key=lambda p: (needle not in posixpath.basename(p.rstrip("/")).lower(), len(p), p))
    return found[: max(1, min(limit, MAX_FOUND))]


def read_file(session: Session, path: str, *, actor: Actor | None) -> dict[str, object]:
    """{path, type: text | binary, size, content (text only), tooLarge}."""
    full = workspace_path(path)
    with reading(session, actor) as (box, slot):
        found = box.stat(full)
        if found is None:
            raise FileError("No such file.", 404)
        if found.type == "dir":
            raise FileError("This is a directory.")
        answer: dict[str, object] = {"path": _relative(full), "size": found.size, "tooLarge": False}
        if found.size > MAX_FILE_BYTES:
            return answer | {"type": "text", "content": "", "tooLarge": True}
        slot.left()
        try:
            data = box.read_bytes(full, max_bytes=MAX_FILE_BYTES)
        except SandboxError as exc:
            if "too large" in str(exc):  # it grew since the stat
                return answer | {"type": "text", "content": "", "tooLarge": True}
            raise FileError(f"The file could not be read: {exc}") from None
    if b"\0" in data[:8192]:
        return answer | {"type": "binary", "content": ""}
    try:
        return answer | {"type": "text", "content": data.decode("utf-8")}
    except UnicodeDecodeError:
        return answer | {"type": "binary", "content": ""}
