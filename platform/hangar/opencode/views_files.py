"""OpenCode's file and find routes (/file, /file/content, /file/status, /find, /find/file, /find/symbol)
over a Hangar project. OpenCode answers them for its one directory; a Hangar project has a workspace per
session, so they read the workspace of the session the request names (`?session=`), else of the
caller's newest session of the project, inside its sandbox, and say which in a header (workspace_scope).
With no session yet there is nothing to list.
Paths are the workspace's; anything that leaves it is a 400. /find/symbol asks the language servers
that session's running sandbox has started (engine.code_intel)."""

from __future__ import annotations

import json
import posixpath
import shlex
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.response import Response

from hangar.conversations import selectors as conversation_selectors
from hangar.engine.workspace import code_intel, workspace_files
from hangar.engine.workspace.workspace_files import FileError
from hangar.opencode.base import OpenCodeView
from hangar.opencode.workspace_scope import SaysWhichSession, workspace_session
from sandbox.protocol import WORKSPACE, SandboxError

OC = ["opencode"]
MAX_MATCHES = 100
MAX_FILES = 200


class Unavailable(APIException):
    status_code = 503


def _required(request, name: str, limit: int = 1000) -> str:
    value = request.query_params.get(name, "")
    if not value or len(value) > limit:
        raise ValidationError({name: [f"Required: text of at most {limit} characters."]})
    return value


def _file_error(exc: FileError) -> APIException:
    if exc.status == 404:
        return NotFound(str(exc))
    return ValidationError({"path": [str(exc)]}) if exc.status == 400 else Unavailable(str(exc))


class FileList(SaysWhichSession, OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_file_list", responses={200: dict})
    def get(self, request, project_id):
        path = request.query_params.get("path", "")
        session = workspace_session(self)
        if session is None:
            return Response([])
        try:
            entries, _ = workspace_files.list_dir(session, path, actor=self.scope.actor)
        except FileError as exc:
            raise _file_error(exc) from None
        return Response(
            [
                {
                    "name": e.name,
                    "path": e.path,
                    "absolute": posixpath.join(WORKSPACE, e.path),
                    "type": e.type,
                    "ignored": False,
                }
                for e in entries
            ]
        )


class FileContent(SaysWhichSession, OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_file_read", responses={200: dict})
    def get(self, request, project_id):
        path = _required(request, "path", workspace_files.MAX_PATH_CHARS)
        session = workspace_session(self)
        if session is None:
            raise NotFound("No session of this project has a workspace yet.")
        try:
            found = workspace_files.read_file(session, path, actor=self.scope.actor)
        except FileError as exc:
            raise _file_error(exc) from None
        return Response({"type": found["type"], "content": found["content"]})


class FileStatus(SaysWhichSession, OpenCodeView):
    """What the session changed, as OpenCode's File list (from the session's stored diff)."""

    @extend_schema(tags=OC, operation_id="oc_file_status", responses={200: dict})
    def get(self, request, project_id):
        session = workspace_session(self)
        diffs = conversation_selectors.session_diff(session) if session is not None else []
        return Response(
            [
                {
                    "path": d["file"],
                    "added": int(d.get("additions") or 0),
                    "removed": int(d.get("deletions") or 0),
                    "status": d.get("status") if d.get("status") in ("added", "deleted") else "modified",
                }
                for d in diffs
            ]
        )


class FindText(SaysWhichSession, OpenCodeView):
    """ripgrep's own JSON matches, as OpenCode answers (it runs ripgrep too), from inside the sandbox."""

    @extend_schema(tags=OC, operation_id="oc_find_text", responses={200: dict})
    def get(self, request, project_id):
        pattern = _required(request, "pattern")
        session = workspace_session(self)
        if session is None:
            return Response([])
        command = (
            f"rg --json --hidden --glob '!.git/' --max-columns 500 --max-count 20 -e {shlex.quote(pattern)}"
            f' | grep \'^{{"type":"match"\' | head -n {MAX_MATCHES}'
        )
        try:
            with workspace_files.reading(session, self.scope.actor) as (box, slot):
                result = box.exec(command, cwd=WORKSPACE, timeout_s=slot.left(20))
        except FileError as exc:
            raise _file_error(exc) from None
        except SandboxError as exc:
            raise Unavailable(f"The search failed: {exc}") from None
        matches = []
        for line in result.output.splitlines():
            data = _match(line)
            if data is not None:
                matches.append(data)
        return Response(matches)


def _match(line: str) -> dict[str, Any] | None:
    """One ripgrep match event's data in OpenCode's shape; None for what it cannot carry (non-UTF-8)."""
    try:
        data = json.loads(line)["data"]
        out = {
            "path": {"text": data["path"]["text"]},
            "lines": {"text": data["lines"]["text"]},
            "line_number": int(data["line_number"]),
            "absolute_offset": int(data["absolute_offset"]),
            "submatches": [
                {"match": {"text": m["match"]["text"]}, "start": int(m["start"]), "end": int(m["end"])}
                for m in data["submatches"]
            ],
        }
    except (ValueError, KeyError, TypeError):
        return None
    return out


class FindFile(SaysWhichSession, OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_find_files", responses={200: dict})
    def get(self, request, project_id):
        query = _required(request, "query", 200)
        kind = request.query_params.get("type") or (
            "file" if request.query_params.get("dirs") == "false" else None
        )
        raw_limit = request.query_params.get("limit", "")
        limit = min(int(raw_limit), MAX_FILES) if raw_limit.isdigit() and int(raw_limit) > 0 else 50
        session = workspace_session(self)
        if session is None:
            return Response([])
        try:
            return Response(workspace_files.find_paths(session, query, kind, limit, actor=self.scope.actor))
        except FileError as exc:
            raise _file_error(exc) from None


class FindSymbol(SaysWhichSession, OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_find_symbols", responses={200: dict})
    def get(self, request, project_id):
        query = _required(request, "query")
        return Response(code_intel.find_symbols(workspace_session(self), query))
