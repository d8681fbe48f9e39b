"""Whether a tool call may run: the step's rules and the session's grants decide, else a person is asked.

`ask_for(call_id)` is the `ctx.ask` a tool calls. It returns (allowed), raises `PermissionDenied` (a rule
said no: the model sees it and goes on), `PermissionRejected` (a person said no) or `PermissionAsked` (a
PermissionRequest is pending: the loop parks the run, and when the reply re-enqueues it the same call runs
again and finds the reply for its (message, call id, permission)). A new ask goes through the project's
headless ask policy for the run's trigger (hangar.engine.agents.headless). Separate from the runner
(hangar.engine.turn.tool_calls) because deciding is about rules and requests, not about parts and tools.
"""

from __future__ import annotations

from typing import Any

from hangar.conversations import loop_selectors as reads
from hangar.conversations.models import Message, PermissionRequest, Session
from hangar.conversations.permission_services import permission_request_create, tool_denied_audit
from hangar.engine.agents import headless
from hangar.engine.agents import permissions as perm
from hangar.engine.tools.base import Ask, PermissionAsked, PermissionRejected

REJECTED = "The user rejected permission to use this specific tool call."


class PermissionDenied(PermissionRejected):
    """A rule (not a person) denied the call: the model sees the error and the turn continues."""


class CallPermissions:
    """The permission side of one step's tool calls: its rules, read grants, and asks."""

    def __init__(
        self,
        session: Session,
        message: Message,
        ruleset: list[dict[str, Any]],
        org_policy: list[dict[str, Any]],
    ):
        self.session = session
        self.message = message
        # Replaced when a policy changes between two calls of the step (hangar.engine.turn.live_policy).
        self.base_ruleset, self.org_policy = ruleset, org_policy
        self._ruleset: list[dict[str, Any]] | None = None

    def policy_changed(self, ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]]) -> None:
        """The rules in force from the next call on; the grants are read again when they matter."""
        self.base_ruleset, self.org_policy, self._ruleset = ruleset, org_policy, None

    def ruleset(self) -> list[dict[str, Any]]:
        if self._ruleset is None:  # once per step: grants made by a reply start a new run anyway
            self._ruleset = self._load_ruleset()
        return self._ruleset

    def _load_ruleset(self) -> list[dict[str, Any]]:
        grants = reads.grants_in_force(self.session)
        return self.base_ruleset + [
            {"permission": p, "pattern": pat, "action": perm.ALLOW, perm.LAYER: "grant"} for p, pat in grants
        ]

    def ask_for(self, call_id: str) -> Ask:
        def ask(permission: str, patterns: list[str], always: list[str], metadata: dict[str, Any]) -> None:
            # Grants only append allow rules (last match wins), so a request the base rules already allow
            # stays allowed with them: read the grants only when the answer could change.
            action = perm.decide(permission, patterns, ruleset=self.base_ruleset, org_policy=self.org_policy)
            if action != perm.ALLOW:
                action = perm.decide(permission, patterns, ruleset=self.ruleset(), org_policy=self.org_policy)
            if action == perm.ALLOW:
                return
            if action == perm.DENY:
                tool_denied_audit(session=self.session, permission=permission, patterns=patterns)
                raise PermissionDenied(
                    f"The user has specified a rule which prevents you from using this specific tool call "
                    f"({permission} {', '.join(patterns)}). Do not retry it; try another approach."
                )
            asked = reads.permission_request_for_call(  # the exact request: call ids repeat across messages
                self.session.pk,
                message_id=self.message.pk,
                call_id=call_id,
                permission=permission,
                patterns=patterns,
            )
            if asked is not None and asked.status in ("once", "always"):
                return
            if asked is not None and asked.status == "reject":
                raise PermissionRejected(REJECTED, feedback=asked.reply_message)
            if asked is None:
                asked = self._ask_headless(call_id, permission, patterns, always, metadata)
                if asked is None:
                    return  # the policy's allow-list approved it
            raise PermissionAsked(asked.pk)

        return ask

    def _ask_headless(
        self, call_id: str, permission: str, patterns: list[str], always: list[str], metadata: dict[str, Any]
    ) -> PermissionRequest | None:
        """A new ask, as the project's headless ask policy for the run's trigger makes it: approved (None)
        or rejected at once (raises), or a pending request with its approvers and expiry."""
        outcome = headless.on_ask(self.session, permission, patterns)
        if outcome.kind == headless.APPROVE:
            return None
        if outcome.kind == headless.REJECT:
            raise PermissionRejected(REJECTED, feedback=outcome.reason)
        asked = permission_request_create(
            session=self.session,
            permission=permission,
            patterns=patterns,
            always=always or patterns,
            metadata=metadata,
            message_id=self.message.pk,
            call_id=call_id,
            approvers=list(outcome.approvers),
            expires_at=outcome.expires_at,
        )
        headless.expiry_scheduled(asked.pk, outcome.expires_at)
        return asked
