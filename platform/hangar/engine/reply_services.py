"""Services that answer what a run waits on: a person's reply to a permission request (once, always,
reject; an "always" stored as a revocable grant), the grants' list and revocation, and answers to (or the
dismissal of) a `question` call. Separate from hangar.engine.services, which starts and stops runs: these
settle a pending request and let the waiting run go on.

Each is atomic, audits, and flags the run on commit (hangar.engine.services.request_run).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import (
    GrantScope,
    PermissionGrant,
    PermissionRequest,
    QuestionRequest,
)
from hangar.conversations.question_services import question_settle
from hangar.engine.services import request_run, require_member
from hangar.errors import NotFound
from hangar.projects.models import Project


def permission_reply(
    *,
    actor: Actor,
    request: PermissionRequest,
    reply: str,
    message: str | None = None,
    scope: str = GrantScope.SESSION,
) -> PermissionRequest:
    """once → the waiting call runs; always → also stored as a revocable grant (session or project);
    reject → the call fails ("rejected", with the person's message for the model). A routed request
    (`approvers`) is answered by those people or an org admin: anyone else is a 403."""
    session = request.session
    require_member(actor, session)
    if request.approvers and actor.user_id not in request.approvers:
        # Routed by the headless ask policy: only the named approvers, or an org admin, answer it.
        from hangar.accounts.selectors import require_role

        require_role(actor, session.org_id, Role.ADMIN)
    if reply not in ("once", "always", "reject"):
        raise ValueError("reply must be once, always or reject")
    if scope not in GrantScope.values:
        raise ValueError("scope must be session or project")
    with transaction.atomic():
        locked = PermissionRequest.objects.select_for_update().get(pk=request.pk)
        if locked.status != "pending":
            return locked
        locked.status, locked.reply_message, locked.replied_at = reply, message or "", timezone.now()
        locked.save(update_fields=["status", "reply_message", "replied_at"])
        if reply == "always":
            for pattern in locked.always or locked.patterns or ["*"]:
                PermissionGrant.objects.create(
                    org_id=session.org_id,
                    project_id=session.project_id,
                    scope=scope,
                    session=session if scope == GrantScope.SESSION else None,
                    permission=locked.permission,
                    pattern=pattern,
                    created_by=actor.user,
                )
        publish(
            session,
            "permission.replied",
            {
                "sessionID": session.pk,
                "requestID": locked.pk,
                "reply": reply,
                **({"message": message} if message else {}),
            },
        )
        audit_record(
            actor=actor,
            action="permission.reply",
            target=locked,
            data={
                "reply": reply,
                "scope": scope if reply == "always" else None,
                "permission": locked.permission,
            },
        )
        request_run(session)
    return locked


def permission_grant_list(*, actor: Actor, project: Project) -> list[PermissionGrant]:
    if actor.org_id != project.org_id:
        return []
    return list(PermissionGrant.objects.filter(project=project, revoked_at__isnull=True).order_by("id"))


def permission_grant_revoke(*, actor: Actor, grant: PermissionGrant) -> PermissionGrant:
    if actor.org_id != grant.org_id:
        raise NotFound()
    if actor.user is not None:
        from hangar.accounts.selectors import require_role

        require_role(actor, grant.org_id, Role.MEMBER)
    with transaction.atomic():
        PermissionGrant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        grant.refresh_from_db()
        audit_record(
            actor=actor,
            action="permission.grant.revoke",
            target=grant,
            data={"permission": grant.permission, "pattern": grant.pattern, "scope": grant.scope},
        )
    return grant


class AnswersRejected(ValueError):
    """Answers that do not fit the questions asked: the edges answer 400 naming `answers`."""


def _check_answers(questions: list[dict[str, Any]], answers: object) -> list[list[str]]:
    if not isinstance(answers, list) or len(answers) != len(questions):
        raise AnswersRejected(
            f"Give one answer (a list of labels) for each of the {len(questions)} questions."
        )
    for index, (question, answer) in enumerate(zip(questions, answers, strict=True)):
        if not isinstance(answer, list) or not all(
            isinstance(a, str) and 0 < len(a) <= 10_000 for a in answer
        ):
            raise AnswersRejected(f"answers[{index}] must be a list of non-empty strings.")
        if not answer or (len(answer) > 1 and not question.get("multiple")):
            raise AnswersRejected(
                f"answers[{index}] must hold exactly one choice (the question is not multiple)."
            )
    return answers  # checked element by element above


def question_reply(*, actor: Actor, request: QuestionRequest, answers: object) -> QuestionRequest:
    """A person's answers (one list of chosen labels, or their own text, per question): the waiting
    `question` call returns them to the model and the run goes on."""
    session = request.session
    require_member(actor, session)
    checked = _check_answers(request.questions, answers)
    with transaction.atomic():
        settled = question_settle(actor=actor, request=request, answers=checked)
        request_run(session)
    return settled


def question_reject(*, actor: Actor, request: QuestionRequest) -> QuestionRequest:
    """A person dismisses the questions: the waiting call fails and the turn stops, as a rejected
    permission does."""
    session = request.session
    require_member(actor, session)
    with transaction.atomic():
        settled = question_settle(actor=actor, request=request, answers=None)
        request_run(session)
    return settled
