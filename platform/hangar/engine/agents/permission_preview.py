""" "What would happen": for an agent, a permission (or the tool that asks it) and a pattern, the action the
loop would take and the rule that decides it, with every rule that matched on the way. It runs the loop's
own merge and decision (hangar.engine.agents.permissions: `merge`, then `verdict`), so a preview cannot drift from
what a session does: defaults → agent → org → project → member → session, the org also a floor. Stored
"always" grants belong to one session and are not part of a preview; a preview's session layer is the
rules it is given (none unless asked)."""

from __future__ import annotations

from typing import Any

from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin import Agent

WHY = {
    "org-deny": "An org policy deny wins over every agent, project, member and session rule.",
    "org-ask": "An org policy ask is a floor: no project, member or session rule and no grant may loosen it.",
    "org": "The last matching rule wins; this is the org's rule, a default the layers below may narrow.",
    "default": "The last matching rule wins; this is a built-in default.",
    "agent": "The last matching rule wins; this rule is the agent's own.",
    "project": "The last matching rule wins; this is the project's rule.",
    "member": "The member's own rule: it may only narrow, and it does here.",
    "session": "The session's rule: it may only narrow, and it does here.",
    "none": "No rule matches, so the agent would ask.",
}
_RULE_KEYS = ("permission", "pattern", "action")


def _why(action: str, rule: dict[str, Any] | None, floor: bool) -> str:
    if rule is None:
        return WHY["none"]
    layer = rule[perm.LAYER]
    if layer == "org" and floor:
        return WHY["org-deny"] if action == perm.DENY else WHY["org-ask"]
    return WHY[layer]


def preview(
    *,
    agent: Agent,
    permission: str,
    pattern: str,
    project_rules: Any,
    org_policy: list[dict[str, Any]],
    member_rules: Any = None,
    session_rules: Any = None,
) -> dict[str, Any]:
    """{action, decided_by: {layer, index, rule} | None, why, matched: [{layer, index, rule, applies}]}."""
    ruleset = perm.merge(
        agent=agent.permission,
        org=org_policy,
        project=project_rules,
        member=member_rules,
        session=session_rules,
    )
    action, rule = perm.verdict(permission, pattern, ruleset=ruleset, org_policy=org_policy)
    floor = perm.org_floor(permission, pattern, org_policy)
    decided = None
    if rule is not None:
        decided = {
            "layer": rule[perm.LAYER],
            "index": rule["index"],
            "rule": {k: rule[k] for k in _RULE_KEYS},
        }
    matched = [
        {
            "layer": r[perm.LAYER],
            "index": r["index"],
            "rule": {k: r[k] for k in _RULE_KEYS},
            "applies": decided is not None
            and (r[perm.LAYER], r["index"]) == (decided["layer"], decided["index"]),
        }
        for r in ruleset
        if perm.match(r["permission"], permission) and perm.match(r["pattern"], pattern)
    ]
    is_floor = (
        floor is not None
        and decided is not None
        and decided["layer"] == "org"
        and floor[0] == decided["index"]
    )
    return {
        "agent": agent.name,
        "permission": permission,
        "pattern": pattern,
        "action": action,
        "decided_by": decided,
        "why": _why(action, rule, is_floor and action != perm.ALLOW),
        "matched": matched,
    }
