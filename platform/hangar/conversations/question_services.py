"""The `question` tool's requests: asked by the loop, answered or rejected by a person (or rejected by an
abort). Each change is one transaction with its event (OpenCode's `question.asked`, `question.replied`,
`question.rejected`) and, for a person's or the system's answer, its audit row. Starting the run again is
the engine's (hangar.engine.reply_services.question_reply)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish, publish_many
from hangar.conversations.loop_services import RUNNER_LABEL
from hangar.conversations.models import QuestionRequest, Session


def question_payload(request: QuestionRequest) -> dict:
    """OpenCode's QuestionRequest JSON shape."""
    return {
        "id": request.pk,
        "sessionID": request.session_id,
        "questions": request.questions,
        "tool": {"messageID": request.message_id, "callID": request.call_id},
    }


def question_request_create(
    *, session: Session, questions: list[dict], message_id: str, call_id: str
) -> QuestionRequest:
    with transaction.atomic():
        request = QuestionRequest.objects.create(
            session=session, questions=questions, message_id=message_id, call_id=call_id
        )
        publish(session, "question.asked", question_payload(request))
    return request


def question_settle(*, actor, request: QuestionRequest, answers: list[list[str]] | None) -> QuestionRequest:
    """Answer (`answers`) or reject (None) a pending request; a settled one is returned as it is. The
    caller has checked the actor may answer and the answers fit the questions."""
    with transaction.atomic():
        locked = QuestionRequest.objects.select_for_update().get(pk=request.pk)
        if locked.status != "pending":
            return locked
        locked.status = "answered" if answers is not None else "rejected"
        locked.answers, locked.replied_at = answers, timezone.now()
        locked.replied_by = actor.user
        locked.save(update_fields=["status", "answers", "replied_at", "replied_by"])
        ids = {"sessionID": locked.session_id, "requestID": locked.pk}
        if answers is not None:
            publish(locked.session, "question.replied", {**ids, "answers": answers})
        else:
            publish(locked.session, "question.rejected", ids)
        audit_record(
            actor=actor, action=f"question.{locked.status}", target=locked, data={"answers": answers}
        )
    return locked


def questions_reject_pending(*, session: Session) -> list[str]:
    """An aborted turn rejects its pending questions (audited as the system's, announced). Their ids."""
    actor = system_actor(session.org_id, RUNNER_LABEL)
    with transaction.atomic():
        pending = list(
            QuestionRequest.objects.select_for_update().filter(session_id=session.pk, status="pending")
        )
        if not pending:
            return []
        QuestionRequest.objects.filter(pk__in=[r.pk for r in pending]).update(
            status="rejected", replied_at=timezone.now()
        )
        for request in pending:
            audit_record(actor=actor, action="question.rejected", target=request, data={"reason": "abort"})
        publish_many(
            session,
            [("question.rejected", {"sessionID": session.pk, "requestID": r.pk}) for r in pending],
        )
    return [r.pk for r in pending]
