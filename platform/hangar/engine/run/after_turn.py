"""What follows a turn's end, off its critical path (as OpenCode does it), once the session is idle: the diff
summary of a run whose steps changed files, the title (hangar.engine.run.titles), and the audit rows for how the
turn ended and what its sandbox's egress proxy refused during the run."""

from __future__ import annotations

from hangar.conversations.run_audit_services import egress_blocked_audit, session_turn_audit
from hangar.engine.run.desk import Desk
from hangar.engine.run.titles import title_maybe
from hangar.engine.session.diffs import summarize as summarize_diffs
from hangar.engine.session.outcomes import NothingToAnswer, TurnEnded
from hangar.engine.workspace.sandboxes import egress_refused
from hangar.projects.models import NetworkPolicy


def after_turn(desk: Desk, ended: TurnEnded, *, aborted: bool, blocked: bool, steps: int) -> None:
    session, box = desk.session, desk.sandbox.attached()
    if desk.sandbox.changed and box is not None:
        summarize_diffs(session, box)
    if not aborted and not blocked:
        ref = desk.planner.model_ref  # the last step's model (None: the turn reached none)
        max_output = desk.window.limits(ref).max_output if ref else 0
        title_maybe(session, desk.planner.model, desk.reader, steps, max_output)
    if not isinstance(ended, NothingToAnswer):  # a run that found no prompt was no turn
        outcome = "aborted" if aborted else ended.outcome
        session_turn_audit(session=session, outcome=outcome, steps=steps)
    if box is not None and session.project.network_policy == NetworkPolicy.ALLOWLIST:
        refused = egress_refused(box, desk.started)  # what its proxy refused during this run
        if refused:
            egress_blocked_audit(session=session, targets=refused)
