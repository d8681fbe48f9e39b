"""Starting and steering a run: prompt_async, abort, permission replies (new and legacy routes), the
pending-permission list. The work is the engine's (hangar.engine.services); these views translate."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from hangar.conversations.models import GrantScope
from hangar.conversations.permission_services import permission_request_payload
from hangar.conversations.selectors import permission_requests
from hangar.opencode import serializers as s
from hangar.opencode.base import OpenCodeView
from hangar.opencode.errors import PermissionNotFound

OC = ["opencode"]


def engine():
    # Late: the engine is a lower layer, but importing it at module load would pull its tool registry
    # into every web process that merely lists sessions.
    from hangar.engine import services

    return services


def replies():
    # Late for the same reason: the services that settle what a run waits on (permissions, questions).
    from hangar.engine import reply_services

    return reply_services


def prompt_kwargs(data: dict) -> dict:
    """OpenCode prompt body → engine.session_prompt keyword arguments."""
    kwargs: dict = {"parts": [dict(part) for part in data["parts"]]}
    if data.get("agent"):
        kwargs["agent"] = data["agent"]
    if data.get("model"):
        kwargs["model"] = dict(data["model"])
    if data.get("messageID"):
        kwargs["message_id"] = data["messageID"]
    if data.get("system"):
        kwargs["system"] = data["system"]
    return kwargs


def prompt(actor, session, data: dict):
    """engine.session_prompt, with its refusals (no model, unsupported part) as OpenCode's 400."""
    services = engine()
    try:
        return services.session_prompt(actor=actor, session=session, **prompt_kwargs(data))
    except services.PromptRejected as exc:
        raise ValidationError({exc.field: [str(exc)]}) from None


def run_command(actor, session, data: dict):
    """engine.session_command from OpenCode's command body, its refusals as OpenCode's 400."""
    from hangar.engine import command_services

    services = engine()
    provider, _, model = data.get("model", "").partition("/")
    try:
        return command_services.session_command(
            actor=actor,
            session=session,
            command=data["command"],
            arguments=data.get("arguments", ""),
            agent=data.get("agent"),
            model={"providerID": provider, "modelID": model} if model else None,
            message_id=data.get("messageID"),
            files=[dict(part) for part in data.get("parts", [])],
        )
    except services.PromptRejected as exc:
        raise ValidationError({exc.field: [str(exc)]}) from None


class PromptAsync(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_prompt_async", request=s.PromptIn, responses={204: None})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        body = s.PromptIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        prompt(self.scope.actor, session, body.validated_data)
        return Response(status=204)


class Summarize(OpenCodeView):
    """OpenCode answers once the compaction is done; Hangar answers as it is queued (the run compacts
    in a worker) and tells the end with `session.compacted`, as OpenCode does too."""

    @extend_schema(tags=OC, operation_id="oc_session_summarize", request=s.SummarizeIn, responses={200: bool})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        body = s.SummarizeIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        services = engine()
        try:
            services.session_summarize(
                actor=self.scope.actor,
                session=session,
                model={"providerID": data["providerID"], "modelID": data["modelID"]},
                auto=data["auto"],
            )
        except services.PromptRejected as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response(True)


class Abort(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_abort", request=None, responses={200: bool})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        engine().session_abort(actor=self.scope.actor, session=session)
        return Response(True)


def _reply(
    view: OpenCodeView, request_id: str, reply: str, message: str | None, session_id: str | None = None
):
    project = view.scope.project
    permission_request = (
        permission_requests(org_id=project.org_id, project_id=project.pk, session_id=session_id)
        .filter(pk=request_id)
        .first()
    )
    if permission_request is None:
        raise PermissionNotFound(request_id)
    kwargs = {"message": message} if message else {}
    if reply == "always":
        # OpenCode's "always" lasts for the session; project-wide grants are made in Hangar's own API.
        kwargs["scope"] = GrantScope.SESSION
    replies().permission_reply(actor=view.scope.actor, request=permission_request, reply=reply, **kwargs)
    return Response(True)


class PermissionReply(OpenCodeView):
    @extend_schema(
        tags=OC, operation_id="oc_permission_reply", request=s.PermissionReplyIn, responses={200: bool}
    )
    def post(self, request, project_id, request_id):
        body = s.PermissionReplyIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        return _reply(self, request_id, body.validated_data["reply"], body.validated_data.get("message"))


class LegacyPermissionRespond(OpenCodeView):
    @extend_schema(
        tags=OC, operation_id="oc_permission_respond", request=s.LegacyPermissionIn, responses={200: bool}
    )
    def post(self, request, project_id, session_id, request_id):
        session = self.get_session(session_id)
        body = s.LegacyPermissionIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        return _reply(self, request_id, body.validated_data["response"], None, session_id=session.pk)


class PermissionList(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_permission_list", responses={200: dict})
    def get(self, request, project_id):
        project = self.scope.project
        pending = permission_requests(org_id=project.org_id, project_id=project.pk, pending_only=True)
        return Response([permission_request_payload(p) for p in pending])
