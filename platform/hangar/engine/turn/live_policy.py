"""Policy changes reach a running session at its next tool call (issue 10, M11).

A session's policy is its project's (network mode and allowlist, sandbox limits, sandbox-safe env vars,
permission rules) and its org's (permission policy). Every write of one moves a stamp: the project's or
the org's `updated_at` (the services and the admin save it; env var writes touch the project's). The run
compares the stamp, never the policy:
  * each step's state read (`StepReader`, the statement every step makes anyway) carries it;
  * between the tool calls of one step, the lease keeper's renewal (once a second, on its own
    connection) carries it for every session the worker runs (hangar.engine.run.leases);
so a tool call costs no statement for this. Only when the stamp moved is the policy re-read (the project
and org rows, one statement) and the live sandbox brought to it (hangar.engine.workspace.sandboxes.sandbox_refresh:
env re-bound, limits updated, egress proxy replaced, or the container recreated where Docker cannot
change it in place; sandbox/live_spec.py says which).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from hangar.conversations.loop_selectors import session_for_run
from hangar.engine.workspace.sandboxes import sandbox_refresh
from hangar.logging import get_logger
from sandbox.protocol import Sandbox

if TYPE_CHECKING:
    from hangar.conversations.models import Session

log = get_logger(__name__)


def stamp_of(session: Session) -> datetime:
    return max(session.project.updated_at, session.org.updated_at)


class LivePolicy:
    """The policy one run last applied, and the check that it is still the one in force."""

    def __init__(self, session: Session, attached: Callable[[], Sandbox | None]) -> None:
        """`attached()`: the run's sandbox if it has attached one yet, else None (attaching applies the
        policy in force then, so there is nothing to bring up to date)."""
        self.session, self._attached = session, attached
        self.stamp = stamp_of(session)

    def observe(self, stamp: datetime | None) -> bool:
        """Given the stamp just read: True if the policy changed (it is then re-read and applied)."""
        if stamp is None or stamp <= self.stamp:
            return False
        fresh = session_for_run(self.session.pk)
        self.session.project, self.session.org = fresh.project, fresh.org
        self.stamp = max(stamp, stamp_of(fresh))
        box = self._attached()
        if box is not None:
            sandbox_refresh(self.session, box)
        log.info("session_policy_changed", session=self.session.pk)
        return True
