"""OpenCode's /vcs/status, /vcs/diff and /vcs/diff/raw over the workspace of one session (see
workspace_scope: `?session=`, else the caller's newest). A session cloned from the project's repository
answers from git: its workspace as it is now against the commit it was cloned at (both of OpenCode's
`mode`s, "git" and "branch", read that one base: the session's branch starts there). A session without a
repository answers from what its own steps changed (the stored snapshot diff, as /session/{id}/diff).
With no session there is nothing changed."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response

from hangar.conversations import selectors as conversation_selectors
from hangar.conversations.models import Session
from hangar.engine import repo_ops
from hangar.opencode.base import OpenCodeView
from hangar.opencode.workspace_scope import HEADER, SaysWhichSession, workspace_session

OC = ["opencode"]
MODES = ("git", "branch")
MAX_CONTEXT = 1000


class VcsUnavailable(APIException):
    status_code = 503


def _changes(session: Session | None) -> tuple[list[dict[str, Any]], str]:
    """(files as VcsFileDiff with per-file patches, the whole raw patch)."""
    if session is None:
        return [], ""
    try:
        diff = repo_ops.workspace_diff(session=session)
    except repo_ops.RepoOpError as exc:
        if exc.kind == "no_repository":
            stored = conversation_selectors.session_diff(session)
            files = [
                {
                    "file": d["file"],
                    "patch": d.get("patch") or "",
                    "additions": int(d.get("additions") or 0),
                    "deletions": int(d.get("deletions") or 0),
                    "status": d.get("status") if d.get("status") in ("added", "deleted") else "modified",
                }
                for d in stored
            ]
            return files, "".join(f["patch"] for f in files)
        raise VcsUnavailable(str(exc)) from None
    patch = str(diff["patch"])
    per_file = _split_patch(patch)
    files = [
        {
            "file": f["path"],
            "patch": per_file.get(f["path"], ""),
            "additions": f["additions"],
            "deletions": f["deletions"],
            "status": f["status"],
        }
        for f in diff["files"]  # type: ignore[attr-defined]
    ]
    return files, patch


def _split_patch(patch: str) -> dict[str, str]:
    """A `git diff --patch` cut into each file's own part, by its `diff --git a/X b/X` header."""
    out: dict[str, str] = {}
    current: str | None = None
    chunk: list[str] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if current is not None:
                out[current] = "".join(chunk)
            names = line.rstrip("\n").split(" b/", 1)
            current, chunk = (names[1] if len(names) == 2 else None), []
        chunk.append(line)
    if current is not None:
        out[current] = "".join(chunk)
    return out


class VcsStatus(SaysWhichSession, OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_vcs_status", responses={200: dict})
    def get(self, request, project_id):
        files, _ = _changes(workspace_session(self))
        return Response([{k: f[k] for k in ("file", "additions", "deletions", "status")} for f in files])


class VcsDiff(SaysWhichSession, OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_vcs_diff", responses={200: dict})
    def get(self, request, project_id):
        session = workspace_session(self)  # first: a foreign session is a 404 whatever else is wrong
        mode = request.query_params.get("mode")
        if mode not in MODES:
            raise ValidationError({"mode": ["Required: git or branch."]})
        context = request.query_params.get("context")
        if context is not None and not (context.isdigit() and int(context) <= MAX_CONTEXT):
            raise ValidationError({"context": [f"A whole number from 0 to {MAX_CONTEXT}."]})
        files, _ = _changes(session)
        return Response(files)


class VcsDiffRaw(OpenCodeView):
    """The raw patch, `text/x-diff` as OpenCode sends it (not JSON, so not through DRF's renderers)."""

    @extend_schema(tags=OC, operation_id="oc_vcs_diff_raw", responses={200: str})
    def get(self, request, project_id):
        session = workspace_session(self)
        _, patch = _changes(session)
        response = HttpResponse(patch, content_type="text/x-diff; charset=utf-8")
        if session is not None:
            response[HEADER] = session.pk
        return response
