"""Audit rows for what an agent's run did that no person asked for one by one: an MCP tool call, a turn's
end (and how), the destinations the sandbox's egress proxy refused. Separate from the conversation writes
(hangar.conversations.services) because these write no conversation row and publish no event: they are
the audit log's record of a run, written by the system actor labelled "agent".
"""

from typing import Any

from django.db import transaction

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.models import Session


def mcp_call_audit(*, session: Session, server: str, tool: str, data: dict[str, Any]) -> None:
    """An MCP tool call (hangar.engine.mcp): which server and tool, for whom, how long and how much came back.
    `data` holds figures only (ms, bytes, ok): a call's arguments may carry secrets and are never kept here."""
    with transaction.atomic():
        audit_record(
            actor=system_actor(session.org_id, label="agent"),
            action="mcp.call",
            target=session,
            data={
                "session": session.pk,
                "project": session.project_id,
                "user": session.prompter_id,
                "server": server,
                "tool": tool,
                **data,
            },
        )


def session_turn_audit(*, session: Session, outcome: str, steps: int) -> None:
    """A turn has ended (after the session went idle): how (finished, stopped, aborted, max_steps,
    error, blocked, refused) and after how many model steps of this run."""
    with transaction.atomic():
        audit_record(
            actor=system_actor(session.org_id, label="agent"),
            action="session.finished",
            target=session,
            data={"session": session.pk, "project": session.project_id, "outcome": outcome, "steps": steps},
        )


def egress_blocked_audit(*, session: Session, targets: list[str]) -> None:
    """The sandbox's egress proxy refused these destinations ("METHOD host:port") during a turn."""
    with transaction.atomic():
        audit_record(
            actor=system_actor(session.org_id, label="agent"),
            action="egress.blocked",
            target=session,
            data={"session": session.pk, "project": session.project_id, "targets": targets},
        )
