"""Sessions API under `/api/orgs/<org>/projects/<project_id>/sessions/`. Thin views: resolve the org
scope (404 for anything foreign), validate input with a serializer, call a selector or a service.

Roles: viewers read; members create, rename and (un)archive; deleting takes an admin or the session's
creator."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import ApiToken, Role
from hangar.api import sessions_serializers as s
from hangar.api.scoping import OrgScope, OrgScopedMixin
from hangar.conversations import selectors, session_services
from hangar.conversations.models import Session
from hangar.conversations.services import session_create
from hangar.engine.workspace_tasks import workspace_prepare_soon
from hangar.projects.selectors import project_get
from hangar.repos.services import workspace_request

TAG = ["sessions"]


class ProjectScopedView(OrgScopedMixin, APIView):
    def project_scope(self, request, at_least: str = Role.VIEWER):
        scope: OrgScope = self.scope(request, at_least)
        return scope, project_get(org=scope.org, project_id=self.kwargs["project_id"])

    def session(self, request, at_least: str = Role.VIEWER) -> tuple[OrgScope, Session]:
        scope, project = self.project_scope(request, at_least)
        session = selectors.session_get(scope.actor, self.kwargs["session_id"], project_id=project.pk)
        return scope, session


def _session_json(session: Session) -> dict:
    return s.SessionOutput(session).data


class RecentQuery(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=50, default=10)


class OrgRecentSessionsView(OrgScopedMixin, APIView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_recent",
        parameters=[RecentQuery],
        responses=s.SessionOutput(many=True),
        summary="The org's newest live root sessions across its projects",
    )
    def get(self, request, org):
        scope: OrgScope = self.scope(request, Role.VIEWER)
        query = RecentQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        items = selectors.sessions_recent(scope.actor, limit=query.validated_data["limit"])
        for session in items:
            session.org = scope.org  # already known: saves a query per row in the output
        return Response([_session_json(x) for x in items])


class SessionCollectionView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_list",
        parameters=[s.SessionListQuery],
        responses=s.SessionPageOutput,
        summary="List a project's sessions, newest first",
    )
    def get(self, request, org, project_id):
        scope, project = self.project_scope(request)
        query = s.SessionListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        archived = {"false": False, "true": True, "all": None}[q["archived"]]
        items = selectors.sessions_list(
            scope.actor,
            project.pk,
            archived=archived,
            parent_id=q.get("parent"),
            roots_only=q["roots"],
            search=q["search"],
            updated_since=q.get("updated_since"),
            cursor=q.get("cursor"),
            limit=q["limit"] + 1,
        )
        page, more = items[: q["limit"]], len(items) > q["limit"]
        for session in page:
            session.org = scope.org  # already known: saves a query per row in the output
        return Response(
            {"items": [_session_json(x) for x in page], "next_cursor": page[-1].pk if more else None}
        )

    @extend_schema(
        tags=TAG,
        operation_id="sessions_create",
        request=s.SessionCreateInput,
        responses={201: s.SessionOutput},
        summary="Create a session",
    )
    def post(self, request, org, project_id):
        scope, project = self.project_scope(request, Role.MEMBER)
        body = s.SessionCreateInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        parent = None
        if data.get("parent"):
            try:
                parent = selectors.session_get(scope.actor, data["parent"], project_id=project.pk)
            except Session.DoesNotExist:
                raise ValidationError({"parent": ["No such session in this project."]}) from None
        with transaction.atomic():  # a bad ref or branch leaves no session behind
            session = session_create(
                actor=scope.actor,
                project=project,
                title=data["title"],
                parent=parent,
                agent=data.get("agent"),
                model=data.get("model"),
                # an API token's session is the headless ask policy's `api` trigger, else the web app's
                source="api" if isinstance(request.auth, ApiToken) else "",
            )
            if project.repo_url or data.get("ref") or data.get("branch"):
                workspace_request(
                    actor=scope.actor, session=session, ref=data.get("ref", ""), branch=data.get("branch", "")
                )
            workspace_prepare_soon(session)  # clone and set up while the first prompt is written
        return Response(_session_json(session), status=status.HTTP_201_CREATED)


class SessionDetailView(ProjectScopedView):
    @extend_schema(
        tags=TAG, operation_id="sessions_get", responses=s.SessionDetailOutput, summary="Get a session"
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        notice = selectors.session_notice(session)
        return Response(s.SessionDetailOutput(session, context={"notice": notice}).data)

    @extend_schema(
        tags=TAG,
        operation_id="sessions_update",
        request=s.SessionUpdateInput,
        responses=s.SessionOutput,
        summary="Rename a session",
    )
    def patch(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = s.SessionUpdateInput(data=request.data)
        body.is_valid(raise_exception=True)
        session = session_services.session_update(
            actor=scope.actor, session=session, title=body.validated_data["title"]
        )
        return Response(_session_json(session))

    @extend_schema(
        tags=TAG,
        operation_id="sessions_delete",
        request=None,
        responses={204: None},
        summary="Delete a session, its children, messages and events",
    )
    def delete(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        session_services.session_delete(actor=scope.actor, session=session)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionArchiveView(ProjectScopedView):
    archived = True

    @extend_schema(
        tags=TAG,
        operation_id="sessions_archive",
        request=None,
        responses=s.SessionOutput,
        summary="Archive a session (hidden from the default list; repeating is a no-op)",
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        session = session_services.session_archive(actor=scope.actor, session=session, archived=self.archived)
        return Response(_session_json(session))


class SessionUnarchiveView(SessionArchiveView):
    archived = False

    @extend_schema(
        tags=TAG,
        operation_id="sessions_unarchive",
        request=None,
        responses=s.SessionOutput,
        summary="Unarchive a session",
    )
    def post(self, request, org, project_id, session_id):
        return super().post(request, org, project_id, session_id)


class SessionChildrenView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_children",
        responses=s.SessionOutput(many=True),
        summary="A session's child (subagent) sessions",
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request)
        return Response([_session_json(child) for child in selectors.session_children(scope.actor, session)])


class MessageCollectionView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="messages_list",
        parameters=[s.MessagesQuery],
        responses=s.MessageOutput(many=True),
        summary="A session's messages with their parts",
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        query = s.MessagesQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        limit = query.validated_data["limit"]
        rows, cursor = selectors.messages_page(
            session, limit=limit, before=query.validated_data.get("before")
        )
        response = Response(rows)
        if cursor:
            # As OpenCode pages its message list: the cursor, and the next page's URL.
            params = request.query_params.copy()
            params["limit"], params["before"] = str(limit), cursor
            response["X-Next-Cursor"] = cursor
            response["Link"] = (
                f'<{request.build_absolute_uri(request.path)}?{params.urlencode()}>; rel="next"'
            )
        return response


class MessageDetailView(ProjectScopedView):
    @extend_schema(tags=TAG, operation_id="messages_get", responses=s.MessageOutput, summary="One message")
    def get(self, request, org, project_id, session_id, message_id):
        _, session = self.session(request)
        return Response(selectors.message_get(session, message_id))


class EventCollectionView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="events_list",
        parameters=[s.EventsQuery],
        responses=s.EventPageOutput,
        summary="Stored events after a sequence number (the HTTP gap-fill path)",
        description="Returns events with `seq > after`, ascending, at most `limit`. Page by passing the "
        "last `seq` received as the next `after` until it reaches `last_seq`.",
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        query = s.EventsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        try:
            events = selectors.events_after(session, q["after"], q["limit"])
        except selectors.EventsPurged as purged:
            # Not a silent gap: the client reloads the session and resumes from last_seq.
            error = {
                "code": "events_purged",
                "message": f"Events up to seq {purged.purged_through} were deleted by the retention policy; "
                "reload the session and resume from last_seq.",
                "purged_through": purged.purged_through,
                "last_seq": purged.last_seq,
            }
            return Response({"error": error}, status=status.HTTP_410_GONE)
        return Response({"events": events, "last_seq": session.event_seq})
