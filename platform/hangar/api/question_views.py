"""A session's questions from /api (the `question` tool): the pending list, answer, reject. The same
engine services stand behind these and the OpenCode routes (hangar.opencode.views_question). Reads are
open to viewers; answering needs a member."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.api.session_steer_views import replies
from hangar.api.sessions_views import ProjectScopedView
from hangar.conversations import selectors
from hangar.conversations.models import QuestionRequest, Session
from hangar.conversations.question_services import question_payload

TAG = ["sessions"]


class QuestionOutput(serializers.Serializer):
    id = serializers.CharField()
    sessionID = serializers.CharField()
    questions = serializers.ListField(child=serializers.DictField())
    tool = serializers.DictField()


class AnswersInput(serializers.Serializer):
    answers = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(max_length=10_000), max_length=50),
        max_length=10,
        help_text="one list per question: the chosen option labels, or the person's own text",
    )


class QuestionSettledOutput(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=["answered", "rejected"])


def _question(scope, session: Session, request_id: str) -> QuestionRequest:
    found = (
        selectors.question_requests(org_id=scope.org.pk, project_id=session.project_id, session_id=session.pk)
        .filter(pk=request_id)
        .first()
    )
    if found is None:
        raise NotFound()
    return found


class SessionQuestionListView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_questions_pending",
        responses=QuestionOutput(many=True),
        summary="Questions the agent asked that still wait for an answer",
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request)
        pending = selectors.question_requests(
            org_id=scope.org.pk, project_id=session.project_id, session_id=session.pk, pending_only=True
        )
        return Response([question_payload(q) for q in pending])


class SessionQuestionReplyView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_question_reply",
        request=AnswersInput,
        responses=QuestionSettledOutput,
        summary="Answer the agent's questions (the run goes on with the answers)",
    )
    def post(self, request, org, project_id, session_id, request_id):
        scope, session = self.session(request, Role.MEMBER)
        body = AnswersInput(data=request.data)
        body.is_valid(raise_exception=True)
        services = replies()
        try:
            settled = services.question_reply(
                actor=scope.actor,
                request=_question(scope, session, request_id),
                answers=body.validated_data["answers"],
            )
        except services.AnswersRejected as exc:
            raise ValidationError({"answers": [str(exc)]}) from None
        return Response({"id": settled.pk, "status": settled.status})


class SessionQuestionRejectView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="sessions_question_reject",
        request=None,
        responses=QuestionSettledOutput,
        summary="Dismiss the agent's questions (the waiting call fails and the turn stops)",
    )
    def post(self, request, org, project_id, session_id, request_id):
        scope, session = self.session(request, Role.MEMBER)
        settled = replies().question_reject(actor=scope.actor, request=_question(scope, session, request_id))
        return Response({"id": settled.pk, "status": settled.status})
