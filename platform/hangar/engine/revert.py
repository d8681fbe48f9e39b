"""Revert, unrevert and fork (seed 000 §11, seed 003 "Fork, Revert, and Undo"): the file side, in the
session's sandbox, behind both edges (/oc and /api). The store side is
`hangar.conversations.revert_services`.

- revert to a message (or a part): the files each later step changed (its `patch` part) are taken back
  from the tree the step started from (or deleted if that tree did not hold them); the tree the workspace
  had before is kept as the revert's `snapshot`, so `unrevert` restores it. Messages stay until the next
  prompt (services.session_prompt) removes them.
- fork at a message: a new session with the history before it and its own sandbox holding the files as
  of that point (the tree the first later step started from; the workspace now if no step came later).

A revert holds the session's row lock while it works on the files, so a prompt arriving meanwhile waits
for it; a busy session is refused (`SessionBusy`), as OpenCode does.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.conversations import loop_selectors as reads
from hangar.conversations import selectors
from hangar.conversations.models import Message, Session
from hangar.conversations.revert_services import (
    session_fork_create,
    session_revert_clear,
    session_revert_mark,
)
from hangar.engine.services import require_member
from hangar.engine.session.diffs import MAX_PATCH_CHARS, range_diffs, snapshot_file_diffs
from hangar.engine.workspace.sandboxes import sandbox_for_request as sandbox_for
from hangar.logging import get_logger
from sandbox.protocol import WORKSPACE, Sandbox, SandboxError
from sandbox.tree_copy import copy_tree

log = get_logger(__name__)


class SessionBusy(Exception):
    """The session is running (or about to): its files are the run's until it ends."""

    def __init__(self, session_id: str):
        super().__init__(f"Session {session_id} is busy")
        self.session_id = session_id


def _idle_locked(session: Session) -> Session:
    locked = Session.objects.select_for_update().get(pk=session.pk)
    if locked.status != "idle" or locked.run_requested or locked.lease_owner:
        raise SessionBusy(session.pk)
    return locked


def revert_point(
    messages: list[dict[str, Any]], message_id: str, part_id: str | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """OpenCode's SessionRevert.revert walk: the revert mark ({messageID, partID?}) and the patch parts
    from the target on. A target message (no part) stands for the prompt it answers; a part with nothing
    said before it in its message is the same as its whole message."""
    last_user: str | None = None
    revert: dict[str, Any] | None = None
    patches: list[dict[str, Any]] = []
    for message in messages:
        info = message["info"]
        if info["role"] == "user":
            last_user = info["id"]
        remaining: list[dict[str, Any]] = []
        for part in message["parts"]:
            if revert is not None:
                if part["type"] == "patch":
                    patches.append(part)
                continue
            if (info["id"] == message_id and not part_id) or (part_id and part["id"] == part_id):
                said = any(p["type"] in ("text", "tool") for p in remaining)
                keep_part = part_id if said else None
                revert = {"messageID": info["id"] if keep_part else (last_user or info["id"])}
                if keep_part:
                    revert["partID"] = keep_part
            remaining.append(part)
    return revert, patches


def _take_back(box: Sandbox, patches: list[dict[str, Any]]) -> None:
    """Each file from the tree of the first step that changed it (OpenCode's Snapshot.revert)."""
    done: set[str] = set()
    for patch in patches:
        paths = []
        for file in patch.get("files") or []:
            rel = file[len(WORKSPACE) + 1 :] if file.startswith(WORKSPACE + "/") else file.lstrip("/")
            if rel and rel not in done:
                done.add(rel)
                paths.append(rel)
        if paths and patch.get("hash"):
            box.snapshot_revert(patch["hash"], paths)


def _diff_text(box: Sandbox, snapshot: str) -> str:
    """What the revert took away, as one patch (OpenCode's `revert.diff`), cut at MAX_PATCH_CHARS."""
    text = "".join(d["patch"] for d in snapshot_file_diffs(box.snapshot_diff(snapshot)))
    return text[:MAX_PATCH_CHARS]


def session_revert(*, actor: Actor, session: Session, message_id: str, part_id: str | None = None) -> Session:
    """Revert the session's files to before `message_id` (or its part `part_id`). Raises
    Message.DoesNotExist for a target not in the session, SessionBusy, or SandboxError (the files are
    then put back as they were, and nothing is marked)."""
    require_member(actor, session)
    with transaction.atomic():
        locked = _idle_locked(session)
        revert, patches = revert_point(selectors.messages_list(locked), message_id, part_id)
        if revert is None:
            raise Message.DoesNotExist(f"Message not found: {part_id or message_id}")
        box = sandbox_for(locked)
        previous = (locked.revert or {}).get("snapshot")
        if previous:
            box.snapshot_restore(previous)  # an earlier revert's files first: this one starts from there
        snapshot = previous or box.snapshot_track()
        try:
            _take_back(box, patches)
            revert["snapshot"] = snapshot
            revert["diff"] = _diff_text(box, snapshot)
            diffs = range_diffs(box, locked.pk, since=revert["messageID"])
        except SandboxError:
            try:
                box.snapshot_restore(snapshot)
            except SandboxError:
                log.warning("revert_rollback_failed", session=locked.pk, exc_info=True)
            raise
        return session_revert_mark(actor=actor, session=locked, revert=revert, diffs=diffs)


def session_unrevert(*, actor: Actor, session: Session) -> Session:
    """Put the files back as they were before the revert and drop the mark (a session not reverted is
    answered as it is)."""
    require_member(actor, session)
    with transaction.atomic():
        locked = _idle_locked(session)
        if not locked.revert:
            return locked
        box = sandbox_for(locked)
        if locked.revert.get("snapshot"):
            box.snapshot_restore(locked.revert["snapshot"])
        diffs = range_diffs(box, locked.pk)
        return session_revert_clear(actor=actor, session=locked, diffs=diffs)


def session_fork(*, actor: Actor, session: Session, message_id: str | None = None) -> Session:
    """A new session with `session`'s history before `message_id` (all of it if None) and the files as of
    that point in a sandbox of its own. All or nothing: if the files cannot be copied the new session is
    not kept (raises SandboxError)."""
    require_member(actor, session)
    if message_id and not Message.objects.filter(session=session, pk=message_id).exists():
        raise Message.DoesNotExist(f"Message not found: {message_id}")
    ran = reads.snapshot_bounds(session.pk)[0] is not None  # no step ever: nothing of the agent's to copy
    later = reads.snapshot_bounds(session.pk, since=message_id)[0] if message_id else None
    with transaction.atomic():
        forked = session_fork_create(
            actor=actor, source=session, before_message_id=message_id, file_point=later
        )
        if ran:
            source = sandbox_for(session)
            tree = later or source.snapshot_track()
            copy_tree(source, tree, sandbox_for(forked))
    return forked
