"""What waits for a person across the org: pending permission and question requests of every session the
caller may see, each with its session's title and project, so the web app can show a notice (and a link)
wherever the person is. Bounded; the org's stream tells the app when to ask again."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.scoping import OrgScopedMixin
from hangar.api.question_views import QuestionOutput
from hangar.api.session_steer_views import PermissionRequestOutput
from hangar.conversations import selectors
from hangar.conversations.models import PermissionRequest, Session
from hangar.conversations.permission_services import permission_request_payload
from hangar.conversations.question_services import question_payload

LIMIT = 50


class WaitingSession(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    project = serializers.IntegerField()


class PendingPermission(PermissionRequestOutput):
    session = WaitingSession()
    approvers = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="routed by the headless ask policy to these users (or an org admin); empty: anyone",
    )
    forYou = serializers.BooleanField(help_text="the caller is one of the approvers")
    expiresAt = serializers.IntegerField(
        allow_null=True,
        min_value=0,
        max_value=2**53,
        help_text="ms since the epoch when it turns into a reject; null: never",
    )


class PendingQuestion(QuestionOutput):
    session = WaitingSession()


class PendingOutput(serializers.Serializer):
    permissions = PendingPermission(many=True)
    questions = PendingQuestion(many=True)


def _routing(request: PermissionRequest, actor) -> dict:
    """Who the headless ask policy routed the request to, and until when (the web app's notice)."""
    expires = request.expires_at
    return {
        "approvers": request.approvers,
        "forYou": actor.user_id in request.approvers,
        "expiresAt": int(expires.timestamp() * 1000) if expires else None,
    }


def _session(session: Session) -> dict:
    return {"id": session.pk, "title": session.title, "project": session.project_id}


class OrgPendingView(OrgScopedMixin, APIView):
    @extend_schema(
        tags=["sessions"],
        operation_id="org_pending_requests",
        responses=PendingOutput,
        summary=f"Permission requests and questions still waiting, across the org's sessions (oldest "
        f"first, at most {LIMIT} of each)",
    )
    def get(self, request, org):
        scope = self.scope(request)
        permissions, questions = selectors.pending_requests(scope.actor, LIMIT)
        return Response(
            {
                "permissions": [
                    permission_request_payload(p)
                    | {"session": _session(p.session)}
                    | _routing(p, scope.actor)
                    for p in permissions
                ],
                "questions": [question_payload(q) | {"session": _session(q.session)} for q in questions],
            }
        )
