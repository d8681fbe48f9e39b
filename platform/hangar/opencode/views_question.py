"""The `question` tool's routes: the pending list, reply and reject (OpenCode's shapes). The work is the
engine's (hangar.engine.reply_services.question_reply / question_reject); these views translate."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from hangar.conversations.models import QuestionRequest
from hangar.conversations.question_services import question_payload
from hangar.conversations.selectors import question_requests
from hangar.opencode import serializers as s
from hangar.opencode.base import OpenCodeView
from hangar.opencode.errors import QuestionNotFound
from hangar.opencode.views_steer import replies

OC = ["opencode"]


def _pending_request(view: OpenCodeView, request_id: str) -> QuestionRequest:
    project = view.scope.project
    found = question_requests(org_id=project.org_id, project_id=project.pk).filter(pk=request_id).first()
    if found is None:
        raise QuestionNotFound(request_id)
    return found


class QuestionList(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_question_list", responses={200: dict})
    def get(self, request, project_id):
        project = self.scope.project
        pending = question_requests(org_id=project.org_id, project_id=project.pk, pending_only=True)
        return Response([question_payload(q) for q in pending])


class QuestionReply(OpenCodeView):
    @extend_schema(
        tags=OC, operation_id="oc_question_reply", request=s.QuestionReplyIn, responses={200: bool}
    )
    def post(self, request, project_id, request_id):
        body = s.QuestionReplyIn(data=request.data or {})
        body.is_valid(raise_exception=True)
        services = replies()
        try:
            services.question_reply(
                actor=self.scope.actor,
                request=_pending_request(self, request_id),
                answers=body.validated_data["answers"],
            )
        except services.AnswersRejected as exc:
            raise ValidationError({"answers": [str(exc)]}) from None
        return Response(True)


class QuestionReject(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_question_reject", request=None, responses={200: bool})
    def post(self, request, project_id, request_id):
        replies().question_reject(actor=self.scope.actor, request=_pending_request(self, request_id))
        return Response(True)
