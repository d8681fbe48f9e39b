"""The headless ask policy at work (hangar.projects.headless says what it is): when the merged rules say
`ask`, what the run's trigger and its project's policy make of it.

- `ask`/`route`: a pending request, with its approvers (route) and expiry; a near expiry gets a task
  for the moment it is due (an eta task), and beat's sweep (`permission_expire_due`, every 30 s) expires
  the others and any an eta task missed.
  An expired request is a reject carrying why, audited (`permission.expired`): the run resumes and the
  model is told, as with a person's reject-with-message, so it goes on or ends cleanly.
- `reject`: no request; the call fails with the policy's reason for the model (`permission.auto_rejected`).
- `allow_listed`: the admin's rules approve what they allow (`permission.auto_approved`), the rest is
  rejected as above.
Nothing waits forever unless a person is at a screen (web and API asks without an expiry)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from hangar.conversations import loop_selectors as reads
from hangar.conversations.models import Session
from hangar.conversations.permission_services import headless_ask_audit, permission_request_expire
from hangar.engine.agents import permissions as perm
from hangar.engine.session.enqueue import enqueue_expiry, enqueue_run
from hangar.projects import headless as policy

APPROVE, REJECT, ASK = "approve", "reject", "ask"


def trigger_of(session: Session) -> str:
    """What started the run, as the policy names it: the session's recorded source, else the web app."""
    return session.source if session.source in policy.TRIGGERS else "web"


@dataclass(frozen=True)
class Outcome:
    kind: str  # approve | reject | ask
    reason: str = ""  # reject: what the model is told
    approvers: tuple[int, ...] = ()  # ask: who may answer (empty: anyone who may answer the session)
    expires_at: datetime | None = None  # ask: when it turns into a reject


def on_ask(session: Session, permission: str, patterns: list[str]) -> Outcome:
    """What an `ask` becomes for this session (audited when no request is made)."""
    trigger = trigger_of(session)
    entry = policy.policy_for(session.project.headless_policy, trigger)
    mode = entry["mode"]
    if mode == "allow_listed":
        rules = entry.get("rules", [])
        if perm.decide(permission, patterns, ruleset=rules, org_policy=[]) == perm.ALLOW:
            _audit(session, "approved", permission, patterns, trigger, mode)
            return Outcome(APPROVE)
    if mode in ("reject", "allow_listed"):
        _audit(session, "rejected", permission, patterns, trigger, mode)
        return Outcome(REJECT, reason=entry.get("reason") or policy.DEFAULT_REASON)
    expire = entry.get("expire_after_s")
    return Outcome(
        ASK,
        approvers=tuple(entry.get("approvers", ())),
        expires_at=timezone.now() + timedelta(seconds=expire) if expire else None,
    )


def _audit(
    session: Session, outcome: str, permission: str, patterns: list[str], trigger: str, mode: str
) -> None:
    headless_ask_audit(
        session=session, outcome=outcome, permission=permission, patterns=patterns, trigger=trigger, mode=mode
    )


# A broker holds an eta task in a worker's memory until it is due, and Redis re-delivers one held past its
# visibility timeout: only a near expiry gets its own task, a far one is left to beat's sweep (30 s).
ETA_MAX_S = 300


def expiry_scheduled(request_id: str, expires_at: datetime | None) -> None:
    """Expire the request when it is due (after commit; a task early or twice finds nothing to do)."""
    if expires_at is not None and (expires_at - timezone.now()).total_seconds() <= ETA_MAX_S:
        enqueue_expiry(request_id, expires_at)


def expired_message(waited_s: float) -> str:
    return (
        f"No one approved this call within {round(waited_s)} s, so the request expired and the call was "
        "rejected. Do not retry it; find another way, or finish and say what was left undone."
    )


def permission_expire(request_id: str, now: datetime | None = None) -> bool:
    """Reject the request if it is still pending and due, audited, and resume its run."""
    expired = permission_request_expire(
        request_id=request_id, now=now or timezone.now(), message_for=expired_message
    )
    if expired is None:
        return False
    enqueue_run(expired.session_id)
    return True


def permission_expire_due() -> int:
    """Beat's sweep: expire every request whose time is up (an eta task lost with a broker restart)."""
    now = timezone.now()
    return sum(permission_expire(request_id, now) for request_id in reads.permission_requests_due(now))
