"""OpenCode's session routes (create, list, get, update, delete, messages, todos, status)."""

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from hangar.conversations import selectors as conversation_selectors
from hangar.conversations.models import Session
from hangar.conversations.services import session_create, session_info
from hangar.conversations.session_services import session_archive, session_delete, session_update
from hangar.engine.workspace_tasks import workspace_prepare_soon
from hangar.opencode import serializers as s
from hangar.opencode import views_history
from hangar.opencode.base import OpenCodeView

OC = ["opencode"]


class SessionListCreate(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_list", responses={200: dict})
    def get(self, request, project_id):
        params = request.query_params
        limit = (
            int(params["limit"]) if params.get("limit", "").isdigit() else conversation_selectors.MAX_LIMIT
        )
        sessions = conversation_selectors.sessions_list(
            self.scope.actor,
            self.scope.project.pk,
            archived=None,
            roots_only=params.get("roots") == "true",
            search=params.get("search", ""),
            limit=limit,
        )
        return Response([session_info(session) for session in sessions])

    @extend_schema(
        tags=OC, operation_id="oc_session_create", request=s.SessionCreateIn, responses={200: dict}
    )
    def post(self, request, project_id):
        body = s.SessionCreateIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        parent = self.get_session(data["parentID"]) if data.get("parentID") else None
        model = data.get("model")
        session = session_create(
            actor=self.scope.actor,
            project=self.scope.project,
            title=data.get("title", ""),
            parent=parent,
            agent=data.get("agent"),
            model={"providerID": model["providerID"], "modelID": model["id"]} if model else None,
            permission=[dict(rule) for rule in data.get("permission", [])],
            source="api",  # an OpenCode client: the headless ask policy's `api` trigger
        )
        workspace_prepare_soon(session)  # a repository project: clone and set up before the first prompt
        return Response(session_info(session))


class SessionDetail(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_get", responses={200: dict})
    def get(self, request, project_id, session_id):
        return Response(session_info(self.get_session(session_id)))

    @extend_schema(
        tags=OC, operation_id="oc_session_update", request=s.SessionUpdateIn, responses={200: dict}
    )
    def patch(self, request, project_id, session_id):
        session = self.get_session(session_id)
        body = s.SessionUpdateIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        session = session_update(
            actor=self.scope.actor,
            session=session,
            title=data.get("title"),
            permission=[dict(rule) for rule in data["permission"]] if "permission" in data else None,
        )
        if "time" in data and "archived" in data["time"]:
            # OpenCode sets time.archived to a ms timestamp to archive, 0 to unarchive.
            stamp = data["time"]["archived"]
            at = datetime.fromtimestamp(stamp / 1000, tz=UTC) if stamp else None
            session = session_archive(actor=self.scope.actor, session=session, archived=bool(stamp), at=at)
        return Response(session_info(session))

    @extend_schema(tags=OC, operation_id="oc_session_delete", responses={200: bool})
    def delete(self, request, project_id, session_id):
        session_delete(actor=self.scope.actor, session=self.get_session(session_id))
        return Response(True)


class SessionStatusList(OpenCodeView):
    """`{sessionID: SessionStatus}` for the project's sessions that are not idle (as OpenCode answers)."""

    @extend_schema(tags=OC, operation_id="oc_session_status", responses={200: dict})
    def get(self, request, project_id):
        rows = (
            conversation_selectors.visible_sessions(self.scope.actor)
            .filter(project_id=self.scope.project.pk)
            .exclude(status="idle")
            .values_list("id", "status", "status_detail")
        )
        return Response({pk: {"type": status, **(detail or {})} for pk, status, detail in rows})


class SessionMessageDetail(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_message", responses={200: dict})
    def get(self, request, project_id, session_id, message_id):
        return Response(conversation_selectors.message_get(self.get_session(session_id), message_id))

    @extend_schema(tags=OC, operation_id="oc_session_message_delete", responses={200: bool})
    def delete(self, request, project_id, session_id, message_id):
        return views_history.remove_message(self, session_id, message_id)


class SessionTodos(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_todo", responses={200: dict})
    def get(self, request, project_id, session_id):
        session: Session = self.get_session(session_id)
        return Response(conversation_selectors.todos_list(session))


class SessionChildren(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_children", responses={200: dict})
    def get(self, request, project_id, session_id):
        session = self.get_session(session_id)
        return Response(
            [session_info(c) for c in conversation_selectors.session_children(self.scope.actor, session)]
        )
