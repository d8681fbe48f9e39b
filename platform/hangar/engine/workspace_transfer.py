"""Files in and out of a session's workspace, for the web app and the API: the workspace as a tar.gz or zip
download, and uploads written into it.

The archive comes from Docker's archive endpoint, which reads the workspace inside the container's own
mounts: a symlink the sandbox planted resolves in the sandbox, never on the host. Uploads are written by
the in-container agent for the same reason. Refusals are hangar.engine.repo_ops' RepoOpError, as the
repository operations' are."""

from __future__ import annotations

import os
import posixpath
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from django.conf import settings

from hangar.accounts.actors import Actor
from hangar.conversations.models import Session
from hangar.engine.repo_ops import RepoOpError
from hangar.engine.services import require_member
from hangar.engine.workspace import zipstream
from hangar.engine.workspace.prepare import WorkspaceError
from hangar.engine.workspace.web_sandbox import Slot, WebSandboxBusy
from hangar.logging import get_logger
from sandbox import gitops, registry, volumes
from sandbox.protocol import WORKSPACE

if TYPE_CHECKING:
    import docker

log = get_logger(__name__)


def _container(session: Session) -> tuple[docker.APIClient, str]:
    from hangar.engine.workspace.sandboxes import manager
    from hangar.engine.workspace.web_sandbox import SandboxNotRunning, running_box
    from sandbox.docker_backend import DockerSandbox

    try:  # only a running one: a worker is asked to start it (hangar.engine.workspace.web_sandbox)
        box = running_box(session.pk, may_start=True)
    except SandboxNotRunning as exc:
        raise WorkspaceError(str(exc)) from None
    if not isinstance(box, DockerSandbox):  # the archive is read by Docker, from the container's mounts
        raise WorkspaceError("This session's sandbox cannot be archived.")
    return manager().api, box.container_name


ARCHIVE_FORMATS = ("tar.gz", "zip")


def workspace_archive(
    *, actor: Actor, session: Session, max_bytes: int | None = None, fmt: str = "tar.gz"
) -> Iterator[bytes]:
    """An iterator of the workspace as tar.gz or zip (close it to give its slot back, _HoldingSlot). Refused up front when the volume already holds more
    than the cap; the stream also stops at the cap (the archive is then cut short, never larger)."""
    if fmt not in ARCHIVE_FORMATS:
        raise RepoOpError("The archive format is tar.gz or zip.", kind="invalid", status=400)
    require_member(actor, session)
    cap = max_bytes or settings.HANGAR_WORKSPACE_ARCHIVE_MAX_BYTES

    try:
        used = _used_bytes(session.pk)
    except (OSError, gitops.GitError):
        used = 0
    if used > cap:
        raise RepoOpError(
            f"The workspace ({used} bytes) exceeds the archive limit of {cap} bytes.",
            kind="too_large",
            status=413,
        )
    _archive_slot_take()
    try:  # the org's place among the web tier's sandbox work, held while the archive streams
        org_slot = web_slot_for_archive(session.org_id)
    except WebSandboxBusy as exc:
        _archive_slot_give()
        raise RepoOpError(str(exc), kind="busy", status=429) from None
    try:
        api, name = _container(session)
        stream, _ = api.get_archive(name, WORKSPACE + "/.")
    except WorkspaceError as exc:
        org_slot.release()
        _archive_slot_give()
        raise RepoOpError(str(exc), kind="not_ready") from None
    except BaseException:
        org_slot.release()
        _archive_slot_give()
        raise
    packed = _gzip(stream, cap) if fmt == "tar.gz" else zipstream.from_tar(stream, cap)
    return _HoldingSlot(_until(packed, org_slot), org_slot)


def web_slot_for_archive(org_id: int) -> Slot:
    """The archive's place (hangar.engine.workspace.web_sandbox): its deadline is the whole stream's,
    HANGAR_WORKSPACE_ARCHIVE_DEADLINE_S."""
    return Slot(org_id, float(getattr(settings, "HANGAR_WORKSPACE_ARCHIVE_DEADLINE_S", 600)))


def _until(packed: Iterator[bytes], slot: Slot) -> Iterator[bytes]:
    """The archive's chunks until its deadline; past it the archive is cut short, as at the size cap."""
    for chunk in packed:
        if slot.deadline - time.monotonic() <= 0:
            log.info("workspace_archive_deadline", org=slot.org_id)
            return
        yield chunk


# The archive is compressed here, in the process that answers the request (a web process): at most
# HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY (default 2) at once per process, so downloads cannot take all of
# its CPU; one more is a 429. A slot is held until the stream ends or is dropped (its generator closed).
_archives_lock = threading.Lock()
_archives_running = 0


def _archive_slot_take() -> None:
    global _archives_running
    limit = settings.HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY
    with _archives_lock:
        if _archives_running >= limit:
            raise RepoOpError(
                f"At most {limit} archives are made at once here: try again in a moment.",
                kind="busy",
                status=429,
            )
        _archives_running += 1


def _archive_slot_give() -> None:
    global _archives_running
    with _archives_lock:
        _archives_running -= 1


class _HoldingSlot:
    """The archive's stream, holding its slot until exhausted or closed (a generator closed before its
    first chunk would never run its `finally`, so this is a class: close() always gives the slot back)."""

    def __init__(self, packed: Iterator[bytes], org_slot: Slot):
        self.packed, self.held, self.org_slot = packed, True, org_slot

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self.packed)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.held:
            self.held = False
            close = getattr(self.packed, "close", None)
            if close:
                close()
            self.org_slot.release()
            _archive_slot_give()


def _used_bytes(session_id: str) -> int:

    record = registry.lookup(volumes.session_key(session_id))
    if record is None:  # no volume yet (or reaped): the archive's sandbox starts from an empty one
        return 0
    stat = os.statvfs(volumes.ensure_mounted(record["volume"]))
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


def _gzip(stream: Iterable[bytes], cap: int) -> Iterator[bytes]:
    packer, sent = zlib.compressobj(6, zlib.DEFLATED, 31), 0
    try:
        for chunk in stream:
            sent += len(chunk)
            if sent > cap:
                return
            out = packer.compress(chunk)
            if out:
                yield out
        yield packer.flush()
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()


def _clean_path(directory: str, filename: str) -> str:
    rel = posixpath.normpath(posixpath.join(directory or ".", filename))
    if rel.startswith(("/", "..")) or rel in (".", "") or "\0" in rel:
        raise RepoOpError(f"Bad upload path {filename!r}.", kind="invalid", status=400)
    return f"{WORKSPACE}/{rel}"


def workspace_upload(
    *, actor: Actor, session: Session, files: list[tuple[str, bytes]], directory: str = ""
) -> list[str]:
    """Write (name, content) files under `directory` of the workspace, through the in-container agent."""
    require_member(actor, session)
    cap = settings.HANGAR_WORKSPACE_UPLOAD_MAX_BYTES
    if sum(len(content) for _, content in files) > cap:
        raise RepoOpError(f"Uploads are limited to {cap} bytes at once.", kind="too_large", status=413)
    targets = [(_clean_path(directory, name), content) for name, content in files]
    from hangar.engine.workspace.sandboxes import sandbox_for

    box = sandbox_for(session)
    for path, content in targets:
        box.write(path, content)
    return [path[len(WORKSPACE) + 1 :] for path, _ in targets]
