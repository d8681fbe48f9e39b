""" "What would happen": for an agent, a permission (or the tool that asks it) and a pattern, the action the
loop would take and the rule that decides it, with every rule that matched on the way. The same layers and
order as the loop (hangar.engine.permissions): the org policy's denies first and on their own, then the
built-in defaults, the agent's rules and the project's, last match wins. Session rules and stored
"always" grants belong to one session and are not part of a preview."""

from __future__ import annotations

from typing import Any

from hangar.engine import permissions as perm
from hangar.engine.agents import Agent

WHY = {
    "org": "An org policy deny wins over every project, agent and session rule.",
    "default": "The last matching rule wins; this is a built-in default.",
    "agent": "The last matching rule wins; this rule is the agent's own.",
    "project": "The last matching rule wins; this is the project's rule.",
    "none": "No rule matches, so the agent would ask.",
}


def _matches(rule: dict[str, Any], permission: str, pattern: str) -> bool:
    return perm.match(rule["permission"], permission) and perm.match(rule["pattern"], pattern)


def preview(
    *,
    agent: Agent,
    permission: str,
    pattern: str,
    project_rules: list[dict[str, Any]],
    org_policy: list[dict[str, Any]],
) -> dict[str, Any]:
    """{action, decided_by: {layer, index, rule} | None, why, matched: [{layer, index, rule, applies}]}."""
    matched: list[dict[str, Any]] = []
    decided: dict[str, Any] | None = None
    for index, rule in enumerate(org_policy):
        if _matches(rule, permission, pattern):
            applies = rule.get("action") == perm.DENY
            matched.append({"layer": "org", "index": index, "rule": rule, "applies": applies})
            if applies and decided is None:
                decided = {"layer": "org", "index": index, "rule": rule}
    layers = (
        ("default", perm.DEFAULTS),
        ("agent", agent.permission),
        ("project", perm.from_config(project_rules)),
    )
    last: dict[str, Any] | None = None
    for layer, rules in layers:
        for index, rule in enumerate(rules):
            if _matches(rule, permission, pattern):
                entry = {"layer": layer, "index": index, "rule": dict(rule), "applies": False}
                matched.append(entry)
                last = entry
    if decided is None and last is not None:
        last["applies"] = True
        decided = {key: last[key] for key in ("layer", "index", "rule")}
    # The action is the loop's own answer (the explanation above walks the same rules in the same order),
    # so a preview cannot drift from what a session would do.
    ruleset = perm.DEFAULTS + agent.permission + perm.from_config(project_rules)
    action = perm.decide(permission, [pattern], ruleset=ruleset, org_policy=org_policy)
    return {
        "agent": agent.name,
        "permission": permission,
        "pattern": pattern,
        "action": action,
        "decided_by": decided,
        "why": WHY[decided["layer"] if decided else "none"],
        "matched": matched,
    }
