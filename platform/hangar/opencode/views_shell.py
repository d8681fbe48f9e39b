"""`!` shell mode and `/init` (OpenCode's `POST /session/{id}/shell` and `POST /session/{id}/init`). The
work is the engine's (hangar.engine.shell_services, and the built-in `init` command of
hangar.engine.agents.builtin_commands run as any command is); these views translate."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from hangar.conversations.selectors import message_get
from hangar.ids import MESSAGE_ID
from hangar.opencode.base import OpenCodeView
from hangar.opencode.errors import SessionBusy
from hangar.opencode.serializers import PromptModelIn, StrictSerializer

OC = ["opencode"]


class ShellIn(StrictSerializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, required=False, max_length=40)
    agent = serializers.CharField(max_length=64)
    model = PromptModelIn(required=False)
    command = serializers.CharField(max_length=10_000, trim_whitespace=False)


class Shell(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_shell", request=ShellIn, responses={200: dict})
    def post(self, request, project_id, session_id):
        from hangar.engine import services as engine_services
        from hangar.engine import shell_services

        session = self.get_session(session_id)
        body = ShellIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            message, _ = shell_services.session_shell(
                actor=self.scope.actor,
                session=session,
                command=data["command"],
                agent=data["agent"],
                model=dict(data["model"]) if data.get("model") else None,
                message_id=data.get("messageID"),
            )
        except shell_services.ShellBusy:
            raise SessionBusy(session.pk) from None
        except shell_services.ShellDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except engine_services.PromptRejected as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response(message_get(session, message.pk))


class InitIn(StrictSerializer):
    modelID = serializers.CharField(max_length=200)
    providerID = serializers.CharField(max_length=64)
    messageID = serializers.RegexField(MESSAGE_ID.pattern, max_length=40)


class Init(OpenCodeView):
    """OpenCode's /init: the built-in `init` command (write or update AGENTS.md) with the given model.
    Answers `true` once the prompt is stored and the run queued (OpenCode answers when the run is done)."""

    @extend_schema(tags=OC, operation_id="oc_session_init", request=InitIn, responses={200: bool})
    def post(self, request, project_id, session_id):
        from hangar.engine import command_services
        from hangar.engine import services as engine_services

        session = self.get_session(session_id)
        body = InitIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            command_services.session_command(
                actor=self.scope.actor,
                session=session,
                command="init",
                model={"providerID": data["providerID"], "modelID": data["modelID"]},
                message_id=data["messageID"],
            )
        except engine_services.PromptRejected as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response(True)
