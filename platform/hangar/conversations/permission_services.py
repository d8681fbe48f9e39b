"""Writes for permission requests, the engine's asks: a pending request with its event and audit row,
its expiry into a reject (the headless ask policy's deadline), the audit rows of asks no one was asked
about (auto-approved, auto-rejected, denied by a rule), and OpenCode's PermissionRequest shape. Separate
from the message and session writes (hangar.conversations.services) because a request is its own
lifecycle (asked, replied or expired) and its rows are audited one by one; a person's reply is the
engine's (hangar.engine.reply_services).
"""

from collections.abc import Callable
from datetime import datetime

from django.db import transaction

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import PermissionRequest, Session


def permission_request_create(
    *,
    session: Session,
    permission: str,
    patterns: list[str],
    always: list[str],
    metadata: dict,
    message_id: str = "",
    call_id: str = "",
    approvers: list[int] | None = None,
    expires_at: datetime | None = None,
) -> PermissionRequest:
    """A pending ask. `approvers` and `expires_at` come from the project's headless ask policy (who may
    answer it; when it turns into a reject)."""
    with transaction.atomic():
        request = PermissionRequest.objects.create(
            session=session,
            permission=permission,
            patterns=patterns,
            always=always,
            metadata=metadata,
            message_id=message_id,
            call_id=call_id,
            approvers=approvers or [],
            expires_at=expires_at,
        )
        publish(session, "permission.asked", permission_request_payload(request))
        _agent_audit(session, "permission.ask", request, permission, patterns)
    return request


def headless_ask_audit(
    *, session: Session, outcome: str, permission: str, patterns: list[str], trigger: str, mode: str
) -> None:
    """The headless ask policy answered an ask no one was asked about: `permission.auto_approved` (an
    admin's allow-list matched) or `permission.auto_rejected` (refused, the reason fed to the model)."""
    with transaction.atomic():
        audit_record(
            actor=system_actor(session.org_id, label="agent"),
            action=f"permission.auto_{outcome}",
            target=session,
            data={
                "session": session.pk,
                "project": session.project_id,
                "permission": permission,
                "patterns": patterns,
                "trigger": trigger,
                "mode": mode,
            },
        )


def permission_request_expire(
    *, request_id: str, now: datetime, message_for: Callable[[float], str]
) -> PermissionRequest | None:
    """Turn a pending request whose time is up into a reject carrying `message_for(seconds waited)` (fed
    to the model), with its event and an audit row (`permission.expired`), and flag its session for a run;
    None when it was answered (or expired) already or its time is not up. The caller enqueues the run."""
    with transaction.atomic():
        request = (
            PermissionRequest.objects.select_for_update()
            .select_related("session")
            .filter(pk=request_id, status="pending", expires_at__lte=now)
            .first()
        )
        if request is None:
            return None
        waited = (now - request.created_at).total_seconds()
        message = message_for(waited)
        request.status, request.reply_message, request.replied_at = "reject", message, now
        request.save(update_fields=["status", "reply_message", "replied_at"])
        session = request.session
        Session.objects.filter(pk=session.pk).update(run_requested=True)
        publish(
            session,
            "permission.replied",
            {"sessionID": session.pk, "requestID": request.pk, "reply": "reject", "message": message},
        )
        audit_record(
            actor=system_actor(session.org_id, label="agent"),
            action="permission.expired",
            target=request,
            data={
                "session": session.pk,
                "project": session.project_id,
                "permission": request.permission,
                "patterns": request.patterns,
                "approvers": request.approvers,
                "waited_s": round(waited),
            },
        )
    return request


def tool_denied_audit(*, session: Session, permission: str, patterns: list[str]) -> None:
    """A rule (the org's policy, the project's, the agent's or the session's) refused a tool call: the
    model is told, and the audit log keeps it."""
    with transaction.atomic():
        _agent_audit(session, "tool.denied", session, permission, patterns)


def _agent_audit(session: Session, action: str, target, permission: str, patterns: list[str]) -> None:
    """An audit row the agent's own request caused (the system acts for it), found by the audit log's
    session and project filters."""
    audit_record(
        actor=system_actor(session.org_id, label="agent"),
        action=action,
        target=target,
        data={
            "session": session.pk,
            "project": session.project_id,
            "permission": permission,
            "patterns": patterns,
        },
    )


def permission_request_payload(request: PermissionRequest) -> dict:
    """OpenCode's PermissionRequest JSON shape."""
    payload = {
        "id": request.pk,
        "sessionID": request.session_id,
        "permission": request.permission,
        "patterns": request.patterns,
        "metadata": request.metadata,
        "always": request.always,
    }
    if request.message_id and request.call_id:
        payload["tool"] = {"messageID": request.message_id, "callID": request.call_id}
    return payload
