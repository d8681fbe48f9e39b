"""Permission rules (seed 000 §7): `{permission, pattern, action}`, wildcard match, last match wins,
no match = ask.

Layers, merged in order: built-in defaults, the agent's rules, the project's
(`Project.permission_rules`), the session's (`Session.permission`), then stored "always" grants
(project scope, then session scope). The org policy (`Org.permission_policy`, see `org_policy_for`) is
evaluated on its own first: if it denies, nothing below can allow.

Session rules are set by any member, project rules by admins: session rules may only narrow. They are
marked (`narrowing`), and a request's action is the stricter of the last match over every rule and the
last match over the rules that are not marked, so a session `allow` never loosens what the layers
around it say.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hangar.agent_config import rules_from_config
from sandbox.protocol import TOOL_OUTPUT_DIR

if TYPE_CHECKING:
    from hangar.accounts.models import Org


from_config = rules_from_config  # the engine's name for it (hangar.agent_config)
ALLOW, ASK, DENY = "allow", "ask", "deny"
_STRICTNESS = {ALLOW: 0, ASK: 1, DENY: 2}
NARROW = "narrow"  # a rule key: this rule may make a decision stricter, never looser

DEFAULTS: list[dict[str, Any]] = [
    {"permission": "*", "pattern": "*", "action": ALLOW},
    {"permission": "doom_loop", "pattern": "*", "action": ASK},
    {"permission": "external_directory", "pattern": "*", "action": ASK},
    # Reading a truncated output back never needs a person's answer (OpenCode allows its Truncate.GLOB).
    {"permission": "external_directory", "pattern": f"{TOOL_OUTPUT_DIR}/*", "action": ALLOW},
    {"permission": "question", "pattern": "*", "action": DENY},
    {"permission": "plan_enter", "pattern": "*", "action": DENY},
    {"permission": "plan_exit", "pattern": "*", "action": DENY},
    {"permission": "read", "pattern": "*.env", "action": ASK},
    {"permission": "read", "pattern": "*.env.*", "action": ASK},
    {"permission": "read", "pattern": "*.env.example", "action": ALLOW},
]


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    # OpenCode's Wildcard: `*` matches anything (slashes included), `?` one character.
    out = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile(f"^{out}$", re.DOTALL)


def match(pattern: str, value: str) -> bool:
    return bool(_compile(pattern).match(value))


def narrowing(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rules` marked so that they can only make a decision stricter (the session's)."""
    return [{**rule, NARROW: True} for rule in rules]


def stricter(a: str, b: str) -> str:
    return a if _STRICTNESS.get(a, 1) >= _STRICTNESS.get(b, 1) else b


def evaluate(permission: str, pattern: str, ruleset: list[dict[str, Any]]) -> str:
    action = unmarked = ASK
    for rule in ruleset:
        if match(rule["permission"], permission) and match(rule["pattern"], pattern):
            action = rule["action"]
            if not rule.get(NARROW):
                unmarked = action
    return stricter(action, unmarked)


def org_denies(permission: str, pattern: str, policy: list[dict[str, Any]]) -> bool:
    """The org policy on its own: a matching deny always wins (no later allow can undo it)."""
    return any(
        rule.get("action") == DENY
        and match(rule["permission"], permission)
        and match(rule["pattern"], pattern)
        for rule in policy or []
    )


def decide(
    permission: str, patterns: list[str], *, ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]]
) -> str:
    """One action for a request over several patterns: any deny → deny; any ask → ask; else allow."""
    actions = set()
    for pattern in patterns or ["*"]:
        if org_denies(permission, pattern, org_policy):
            return DENY
        actions.add(evaluate(permission, pattern, ruleset))
    if DENY in actions:
        return DENY
    return ASK if ASK in actions else ALLOW


def disabled_tools(
    tool_names: list[str], ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]]
) -> set[str]:
    """Tools whose permission is denied for every pattern are not offered to the model at all.
    Edit-family tools share the `edit` permission (OpenCode)."""
    out = set()
    for name in tool_names:
        permission = permission_for_tool(name)
        last = last_unmarked = None
        for rule in ruleset:
            if match(rule["permission"], permission):
                last = rule
                if not rule.get(NARROW):
                    last_unmarked = rule
        denied = [r for r in (last, last_unmarked) if r and r["pattern"] == "*" and r["action"] == DENY]
        if denied or org_denies(permission, "*", org_policy):
            out.add(name)
    return out


def permission_for_tool(name: str) -> str:
    return "edit" if name in ("write", "edit", "apply_patch", "multiedit") else name


def session_ruleset(
    agent_rules: list[dict[str, Any]], project_rules: Any, session_rules: Any
) -> list[dict[str, Any]]:
    """The rules a session's agent works under, lowest first: the defaults, the agent's, the project's,
    then the session's (members' rules only narrow). The org's policy is applied on top by `decide`."""
    return DEFAULTS + agent_rules + from_config(project_rules) + narrowing(from_config(session_rules))


def org_policy_for(org: Org) -> list[dict[str, Any]]:
    """The org-wide rules (accounts.Org.permission_policy), set by admins through the API."""
    return list(org.permission_policy or [])
