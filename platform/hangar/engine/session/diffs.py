"""Diff summaries (OpenCode's SessionSummary): what a session and each prompt changed in the workspace,
from the snapshot trees its steps recorded (step-start / step-finish parts).

A run whose steps changed files ends with one summary: the session's diff (its first tree to its last) and
the last prompt's (the first tree of its answer to the last), as OpenCode's `summary.diffs`,
`Session.summary` and the `session.diff` event. A run that changed nothing pays nothing for it.
"""

from __future__ import annotations

import difflib
from typing import Any

from hangar.conversations import loop_selectors as reads
from hangar.conversations.models import Session
from hangar.conversations.revert_services import diff_summary_set
from hangar.logging import get_logger
from sandbox.protocol import FileDiff, Sandbox, SandboxError

log = get_logger(__name__)
MAX_PATCH_CHARS = 64 * 1024  # one file's patch as stored and sent; a longer one is cut (and says so)


def patch_text(diff: FileDiff) -> str:
    before = diff.before.splitlines(keepends=True)
    after = diff.after.splitlines(keepends=True)
    lines = difflib.unified_diff(
        before,
        after,
        fromfile="/dev/null" if diff.status == "added" else f"a/{diff.path}",
        tofile="/dev/null" if diff.status == "deleted" else f"b/{diff.path}",
    )
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    if len(text) > MAX_PATCH_CHARS:
        text = text[:MAX_PATCH_CHARS] + "\n... (patch cut)\n"
    return text


def snapshot_file_diffs(diffs: list[FileDiff]) -> list[dict[str, Any]]:
    """OpenCode's SnapshotFileDiff list."""
    return [
        {
            "file": d.path,
            "patch": patch_text(d),
            "additions": d.additions,
            "deletions": d.deletions,
            "status": d.status,
        }
        for d in diffs
    ]


def tree_diffs(box: Sandbox, bounds: tuple[str | None, str | None]) -> list[dict[str, Any]]:
    """The diff between two trees: [] when either is unknown or they are the same."""
    start, end = bounds
    if not start or not end or start == end:
        return []
    return snapshot_file_diffs(box.snapshot_diff(start, end))


def range_diffs(
    box: Sandbox, session_id: str, since: str | None = None, until: str | None = None
) -> list[dict[str, Any]]:
    """The diff of the steps of the messages in [since, until): [] when they recorded no trees."""
    return tree_diffs(box, reads.snapshot_bounds(session_id, since, until))


def summarize(session: Session, box: Sandbox) -> None:
    """The session's and its last prompt's diff, stored and told (after a run that changed files)."""
    ranges = reads.diff_ranges(session.pk)
    try:
        session_diffs = tree_diffs(box, ranges.session)
        if not ranges.user_id:
            message_diffs = []
        elif ranges.prompt == ranges.session:  # the session's first prompt: the same two trees
            message_diffs = session_diffs
        else:
            message_diffs = tree_diffs(box, ranges.prompt)
    except SandboxError:
        log.warning("diff_summary_failed", session=session.pk, exc_info=True)
        return
    diff_summary_set(
        session=session, diffs=session_diffs, message_id=ranges.user_id, message_diffs=message_diffs
    )
