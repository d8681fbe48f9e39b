"""Which session's workspace a workspace route reads (/file*, /find*, /vcs*). OpenCode has one
directory; a Hangar project has a workspace per session. The caller names the session with `?session=`
(or `?sessionID=`, or a `directory` of `/workspace/<session id>`), scoped to the caller's project: a
foreign or missing session is a 404. A stock client that names none (its `directory` is the `/workspace`
that /path gave it) gets the caller's newest session of the project. Every answer says which session it
read in the `X-Hangar-Session` header (absent when there was none to read)."""

from __future__ import annotations

import posixpath

from rest_framework.exceptions import ValidationError

from hangar.conversations import selectors as conversation_selectors
from hangar.conversations.models import Session
from sandbox.protocol import WORKSPACE

HEADER = "X-Hangar-Session"
MAX_ID_CHARS = 64


def _named(request) -> str | None:
    params = request.query_params
    for name in ("session", "sessionID"):
        value = params.get(name)
        if value:
            if len(value) > MAX_ID_CHARS:
                raise ValidationError({name: [f"A session id of at most {MAX_ID_CHARS} characters."]})
            return value
    directory = params.get("directory") or ""
    if directory.startswith(WORKSPACE + "/"):
        rest = posixpath.normpath(directory)[len(WORKSPACE) + 1 :]
        if rest.startswith("ses") and "/" not in rest and len(rest) <= MAX_ID_CHARS:
            return rest
    return None


def workspace_session(view) -> Session | None:
    """The session the request names (404 if it is not the caller's project's), else the caller's
    newest root session of the project, else None. Remembered on the view for the header."""
    named = _named(view.request)
    if named is not None:
        session: Session | None = view.get_session(named)
    else:
        newest = conversation_selectors.sessions_list(
            view.scope.actor, view.scope.project.pk, archived=False, roots_only=True, search="", limit=1
        )
        session = newest[0] if newest else None
    view.workspace_read = session
    return session


class SaysWhichSession:
    """Mixin for an OpenCodeView: the answer names the session whose workspace it read."""

    workspace_read: Session | None = None

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        if self.workspace_read is not None:
            response[HEADER] = self.workspace_read.pk
        return response
