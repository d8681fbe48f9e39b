"""A session's file history from /api: revert, unrevert, fork and the diff. The same engine services stand
behind these and the OpenCode routes (hangar.opencode.views_revert); these views translate: an org-scoped
URL, Hangar's error envelope and its OpenAPI schema. Reading the diff is open to viewers; the rest needs a
member."""

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.api import sessions_serializers as s
from hangar.api.sessions_views import ProjectScopedView
from hangar.conversations import selectors
from hangar.conversations.models import Message
from hangar.ids import MESSAGE_ID
from sandbox.protocol import SandboxError

TAG = ["sessions"]


class SessionBusy(APIException):
    status_code = 409
    default_code = "session_busy"


class SandboxFailed(APIException):
    status_code = 503
    default_code = "sandbox_failed"


def engine_call(service: str, **kwargs: Any) -> Any:
    from hangar.engine import revert  # late, as in the other views: the engine's registry is heavy

    work: Callable[..., Any] = getattr(revert, service)
    try:
        return work(**kwargs)
    except revert.SessionBusy:
        raise SessionBusy("The session is running: wait for it to finish, or abort it.") from None
    except Message.DoesNotExist:
        raise NotFound() from None
    except SandboxError as exc:
        raise SandboxFailed(f"The session's sandbox could not do it: {exc}") from None


class RevertInput(serializers.Serializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, max_length=40, help_text="revert to before it")
    partID = serializers.RegexField(
        r"^prt_[0-9A-Za-z]{1,36}$", required=False, max_length=40, help_text="or to before this part of it"
    )


class ForkInput(serializers.Serializer):
    messageID = serializers.RegexField(
        MESSAGE_ID.pattern, required=False, max_length=40, help_text="the history before it (default: all)"
    )


class DiffQuery(serializers.Serializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, required=False, max_length=40)


class FileDiffOutput(serializers.Serializer):
    file = serializers.CharField()
    patch = serializers.CharField(required=False)
    additions = serializers.IntegerField()
    deletions = serializers.IntegerField()
    status = serializers.CharField(required=False)


class SessionRevertView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_revert",
        request=RevertInput,
        responses=s.SessionOutput,
        summary="Undo the file changes from a message (or part) on; its messages go at the next prompt",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = RevertInput(data=request.data)
        body.is_valid(raise_exception=True)
        reverted = engine_call(
            "session_revert",
            actor=scope.actor,
            session=session,
            message_id=body.validated_data["messageID"],
            part_id=body.validated_data.get("partID"),
        )
        return Response(s.SessionOutput(reverted).data)


class SessionUnrevertView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_unrevert",
        request=None,
        responses=s.SessionOutput,
        summary="Bring back the files and messages of the last revert",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        restored = engine_call("session_unrevert", actor=scope.actor, session=session)
        return Response(s.SessionOutput(restored).data)


class SessionForkView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_fork",
        request=ForkInput,
        responses={201: s.SessionOutput},
        summary="A new session with the history before a message and the files as of that point",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = ForkInput(data=request.data)
        body.is_valid(raise_exception=True)
        forked = engine_call(
            "session_fork",
            actor=scope.actor,
            session=session,
            message_id=body.validated_data.get("messageID"),
        )
        return Response(s.SessionOutput(forked).data, status=status.HTTP_201_CREATED)


class SessionDiffView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_diff",
        parameters=[DiffQuery],
        responses=FileDiffOutput(many=True),
        summary="The session's file changes (or those answering one prompt)",
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        query = DiffQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(selectors.session_diff(session, query.validated_data.get("messageID")))
