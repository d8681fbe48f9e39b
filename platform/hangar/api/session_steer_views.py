"""Driving a session from /api: prompt, abort, permission replies, todos, the project's agents.

The same engine services stand behind these and the OpenCode routes (hangar.opencode.views_steer):
`session_prompt`, `session_abort`, `permission_reply`. These views only translate: an org-scoped URL,
Hangar's error envelope and its OpenAPI schema. Reads are open to viewers, the rest needs a member."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.api.sessions_serializers import ModelField
from hangar.api.sessions_views import ProjectScopedView
from hangar.conversations import selectors
from hangar.conversations.models import GrantScope
from hangar.conversations.permission_services import permission_request_payload

TAG = ["sessions"]


def command_services():
    from hangar.engine import command_services

    return command_services


def engine():
    # Late, as in the OpenCode views: listing sessions should not import the engine's tool registry.
    from hangar.engine import services

    return services


def replies():
    # Late for the same reason: the services that settle what a run waits on (permissions, questions).
    from hangar.engine import reply_services

    return reply_services


class PromptPartInput(serializers.Serializer):
    type = serializers.ChoiceField(choices=["text", "file"])
    text = serializers.CharField(required=False, allow_blank=False, max_length=200_000)
    mime = serializers.CharField(required=False, max_length=200)
    filename = serializers.CharField(required=False, max_length=500)
    url = serializers.CharField(required=False, max_length=10_000_000)

    def validate(self, data):
        needed = ["text"] if data["type"] == "text" else ["mime", "url"]
        missing = [name for name in needed if not data.get(name)]
        if missing:
            raise ValidationError({name: [f"Required for a {data['type']} part."] for name in missing})
        return data


class PromptInput(serializers.Serializer):
    # DRF hands max_length to the ListSerializer `many=True` builds (LIST_SERIALIZER_KWARGS); the stubs'
    # signature of the child serializer does not list it.
    parts = PromptPartInput(many=True, allow_empty=False, max_length=100)  # type: ignore[call-arg]

    agent = serializers.RegexField(r"^[A-Za-z0-9_.-]{1,64}$", required=False)
    model = ModelField(required=False)


class CommandInput(serializers.Serializer):
    command = serializers.RegexField(
        r"^/?[A-Za-z0-9][A-Za-z0-9_./-]{0,255}$", help_text="a command of the workspace's .opencode/commands/"
    )
    arguments = serializers.CharField(
        required=False, allow_blank=True, max_length=100_000, trim_whitespace=False
    )
    agent = serializers.RegexField(r"^[A-Za-z0-9_.-]{1,64}$", required=False)
    model = ModelField(required=False)


class PromptOutput(serializers.Serializer):
    message = serializers.CharField(help_text="the stored user message's id")
    queued = serializers.BooleanField(help_text="true when the session was busy: the running loop reads it")


class PermissionRequestOutput(serializers.Serializer):
    id = serializers.CharField()
    sessionID = serializers.CharField()
    permission = serializers.CharField()
    patterns = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField()
    always = serializers.ListField(child=serializers.CharField())
    tool = serializers.DictField(required=False)


class PermissionReplyInput(serializers.Serializer):
    reply = serializers.ChoiceField(choices=["once", "always", "reject"])
    message = serializers.CharField(required=False, allow_blank=True, max_length=4000)
    scope = serializers.ChoiceField(
        choices=GrantScope.values,
        required=False,
        default=GrantScope.SESSION,
        help_text='for "always": how far the grant reaches',
    )


class PermissionReplyOutput(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.CharField(help_text="once | always | reject (or the earlier reply, if any)")


class TodoOutput(serializers.Serializer):
    content = serializers.CharField()
    status = serializers.CharField()
    priority = serializers.CharField()


class AgentOutput(serializers.Serializer):
    name = serializers.CharField()
    mode = serializers.CharField()
    description = serializers.CharField(required=False)


class SessionPromptView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_prompt",
        request=PromptInput,
        responses={202: PromptOutput},
        summary="Send a prompt (starts a run, or is read by the running one at its next step)",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = PromptInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        return _accepted(
            session,
            lambda services: services.session_prompt(
                actor=scope.actor,
                session=session,
                parts=[dict(part) for part in data["parts"]],
                agent=data.get("agent"),
                model=data.get("model"),
            ),
        )


class SessionCommandView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_command",
        request=CommandInput,
        responses={202: PromptOutput},
        summary="Run a workspace command (its template, filled from the arguments, becomes the prompt)",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = CommandInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        return _accepted(
            session,
            lambda _services: command_services().session_command(
                actor=scope.actor,
                session=session,
                command=data["command"],
                arguments=data.get("arguments", ""),
                agent=data.get("agent"),
                model=data.get("model"),
            ),
        )


def _accepted(session, start) -> Response:
    """202 with the stored message's id (and whether a running loop will read it), or the engine's
    refusal as a 400 naming its field."""
    services = engine()
    queued = session.status != "idle"
    try:
        message = start(services)
    except services.PromptRejected as exc:
        raise ValidationError({exc.field: [str(exc)]}) from None
    return Response({"message": message.pk, "queued": queued}, status=status.HTTP_202_ACCEPTED)


class SummarizeInput(serializers.Serializer):
    model = ModelField(required=False, help_text="the model that summarises (default: the session's)")
    auto = serializers.BooleanField(
        required=False,
        default=False,
        help_text="continue the work after the summary, as an automatic one does",
    )


class SummarizeOutput(serializers.Serializer):
    message = serializers.CharField(help_text="the stored compaction request (a user message)")
    queued = serializers.BooleanField(
        help_text="true when the session was busy: the running loop compacts next"
    )


class SessionSummarizeView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_summarize",
        request=SummarizeInput,
        responses={202: SummarizeOutput},
        summary="Compact the history now: the compaction agent summarises it; the model is sent the summary on",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = SummarizeInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        services = engine()
        queued = session.status != "idle"
        try:
            message = services.session_summarize(
                actor=scope.actor, session=session, model=data.get("model"), auto=data["auto"]
            )
        except services.PromptRejected as exc:
            raise ValidationError({"model": [str(exc)]}) from None
        return Response({"message": message.pk, "queued": queued}, status=status.HTTP_202_ACCEPTED)


class SessionAbortView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_abort",
        request=None,
        responses={204: None},
        summary="Stop the session's run (the stream and any running command)",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        engine().session_abort(actor=scope.actor, session=session)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionTodosView(ProjectScopedView):
    @extend_schema(
        tags=TAG, operation_id="sessions_todos", responses=TodoOutput(many=True), summary="The todo list"
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        return Response(selectors.todos_list(session))


class SessionPermissionListView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_permissions_pending",
        responses=PermissionRequestOutput(many=True),
        summary="Permission requests of the session still waiting for a reply",
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request)
        pending = selectors.permission_requests(
            org_id=scope.org.pk, project_id=session.project_id, session_id=session.pk, pending_only=True
        )
        return Response([permission_request_payload(p) for p in pending])


class SessionPermissionReplyView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_permission_reply",
        request=PermissionReplyInput,
        responses=PermissionReplyOutput,
        summary="Reply to a permission request: allow once, always (session or project), or reject",
    )
    def post(self, request, org, project_id, session_id, request_id):
        scope, session = self.session(request, Role.MEMBER)
        body = PermissionReplyInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        permission_request = (
            selectors.permission_requests(
                org_id=scope.org.pk, project_id=session.project_id, session_id=session.pk
            )
            .filter(pk=request_id)
            .first()
        )
        if permission_request is None:
            raise NotFound()
        replied = replies().permission_reply(
            actor=scope.actor,
            request=permission_request,
            reply=data["reply"],
            message=data.get("message") or None,
            scope=data["scope"],
        )
        return Response({"id": replied.pk, "status": replied.status})


class ProjectAgentsView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="project_agents",
        responses=AgentOutput(many=True),
        summary="The agents a prompt may name (build, plan and the project's own)",
    )
    def get(self, request, org, project_id):
        from hangar.engine.agents.builtin import agent_list

        self.project_scope(request)
        return Response(
            [
                {"name": a.name, "mode": a.mode, **({"description": a.description} if a.description else {})}
                for a in agent_list()
            ]
        )
