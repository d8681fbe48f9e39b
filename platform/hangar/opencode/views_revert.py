"""OpenCode's file-history routes: revert, unrevert, fork, diff. The work is the engine's
(hangar.engine.revert, the same services /api calls); these views translate."""

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from hangar.conversations import selectors as conversation_selectors
from hangar.conversations.models import Message
from hangar.conversations.services import session_info
from hangar.opencode import serializers as s
from hangar.opencode.base import OpenCodeView
from hangar.opencode.errors import SandboxFailed, SessionBusy
from sandbox.protocol import SandboxError

OC = ["opencode"]


def engine_call(service: str, **kwargs: Any) -> Any:
    """Run an engine file-history service (hangar.engine.revert), its refusals as OpenCode's errors."""
    from hangar.engine import revert  # late: listing sessions should not import the engine

    work: Callable[..., Any] = getattr(revert, service)
    try:
        return work(**kwargs)
    except revert.SessionBusy as exc:
        raise SessionBusy(exc.session_id) from None
    except Message.DoesNotExist as exc:
        raise NotFound(str(exc) or "Message not found") from None
    except SandboxError as exc:
        raise SandboxFailed(f"The session's sandbox could not do it: {exc}") from None


class Revert(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_revert", request=s.RevertIn, responses={200: dict})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        body = s.RevertIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        reverted = engine_call(
            "session_revert",
            actor=self.scope.actor,
            session=session,
            message_id=data["messageID"],
            part_id=data.get("partID"),
        )
        return Response(session_info(reverted))


class Unrevert(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_unrevert", request=None, responses={200: dict})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        restored = engine_call("session_unrevert", actor=self.scope.actor, session=session)
        return Response(session_info(restored))


class Fork(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_fork", request=s.ForkIn, responses={200: dict})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        body = s.ForkIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        forked = engine_call(
            "session_fork",
            actor=self.scope.actor,
            session=session,
            message_id=body.validated_data.get("messageID"),
        )
        return Response(session_info(forked))


class Diff(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_diff", parameters=[s.DiffQuery], responses={200: dict})
    def get(self, request, project_id, session_id):
        session = self.get_session(session_id)
        query = s.DiffQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        message_id = query.validated_data.get("messageID")
        try:
            return Response(conversation_selectors.session_diff(session, message_id))
        except Message.DoesNotExist:
            raise NotFound(f"Message not found: {message_id}") from None
