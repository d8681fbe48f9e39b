"""Permission rules (seed 000 §7): `{permission, pattern, action}`, wildcard match, last match wins,
no match = ask.

The one merge (`merge`, used by the loop, the slash commands, the task tool and the console's preview;
docs/permissions.md says it for people): layers in order, lowest first,

    defaults → agent → org → project → member → session (→ stored "always" grants)

- Each layer's rules are appended in that order and the last matching rule wins, as in OpenCode.
- The org is also a floor, read on its own (`verdict`): any matching org `deny` wins over everything,
  the org's own later rules included; when the org's last matching non-deny rule is `ask`, nothing below
  it (project, member, session, nor an "always" grant) can make it `allow`. An org `allow` is an
  ordinary rule: a default that the project, member and session layers may narrow.
- Member rules (`Membership.permission_rules`, the person whose run it is) and session rules may only
  narrow. They are marked (`narrowing`): the last match over the ordinary rules is the base, and each
  narrowing layer's own last match can only make it stricter, so their `allow` never loosens what the
  layers around them say (a workspace agent's rules are marked the same way).
- A stored "always" grant answers an ask: it turns what would still ask into allow, never a deny, and
  never an org ask.

Every rule in a merged ruleset carries its `layer`, so the preview can name the one that decides.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hangar.agent_config import rules_from_config
from sandbox.protocol import TOOL_OUTPUT_DIR

if TYPE_CHECKING:
    from hangar.accounts.models import Org
    from hangar.conversations.models import Session


from_config = rules_from_config  # the engine's name for it (hangar.agent_config)
ALLOW, ASK, DENY = "allow", "ask", "deny"
_STRICTNESS = {ALLOW: 0, ASK: 1, DENY: 2}
NARROW = "narrow"  # a rule key: this rule may make a decision stricter, never looser
LAYER = "layer"  # a rule key: the layer a merged rule came from (the preview names it)
LAYERS = ("default", "agent", "org", "project", "member", "session", "grant")

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


def evaluate(permission: str, pattern: str, ruleset: list[dict[str, Any]]) -> str:
    return _decisive(permission, pattern, ruleset)[0]


def _decisive(
    permission: str, pattern: str, ruleset: list[dict[str, Any]]
) -> tuple[str, dict[str, Any] | None]:
    """The action of the ruleset alone and the rule that gives it. The last match among the ordinary
    rules is the base; each narrowing layer's own last match may only make it stricter (the strictest
    wins, the earlier on a tie); then a matching grant (a person's "always") answers what is still an ask."""
    base: dict[str, Any] | None = None
    narrow: dict[Any, dict[str, Any]] = {}
    grant: dict[str, Any] | None = None
    for rule in ruleset:
        if match(rule["permission"], permission) and match(rule["pattern"], pattern):
            if rule.get(LAYER) == "grant":
                grant = rule
            elif rule.get(NARROW):
                narrow[rule.get(LAYER)] = rule
            else:
                base = rule
    action, decisive = (base["action"], base) if base else (ASK, None)
    for rule in narrow.values():
        if _STRICTNESS.get(rule["action"], 1) > _STRICTNESS.get(action, 1):
            action, decisive = rule["action"], rule
    if action == ASK and grant is not None:
        return ALLOW, grant
    return action, decisive


def org_floor(
    permission: str, pattern: str, policy: list[dict[str, Any]]
) -> tuple[int, dict[str, Any]] | None:
    """The org policy on its own: (index, rule) of a matching deny (the first: it wins whatever follows),
    else of the last matching rule when that is an ask; None when the org sets no floor here."""
    last: tuple[int, dict[str, Any]] | None = None
    for index, rule in enumerate(policy or []):
        if match(rule["permission"], permission) and match(rule["pattern"], pattern):
            if rule.get("action") == DENY:
                return index, rule
            last = (index, rule)
    return last if last is not None and last[1].get("action") == ASK else None


def org_denies(permission: str, pattern: str, policy: list[dict[str, Any]]) -> bool:
    """The org policy on its own: a matching deny always wins (no later allow can undo it)."""
    floor = org_floor(permission, pattern, policy)
    return floor is not None and floor[1].get("action") == DENY


def verdict(
    permission: str, pattern: str, *, ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]]
) -> tuple[str, dict[str, Any] | None]:
    """The action for one pattern and the rule that decides it (None: no rule matched, so ask). The one
    decision the loop and the preview share: the org floor, then the merged ruleset's last match."""
    floor = org_floor(permission, pattern, org_policy)
    if floor is not None and floor[1].get("action") == DENY:
        return DENY, {**floor[1], LAYER: "org", "index": floor[0]}
    action, rule = _decisive(permission, pattern, ruleset)
    if floor is not None and action == ALLOW:  # an org ask: nothing below it may loosen it
        return ASK, {**floor[1], LAYER: "org", "index": floor[0]}
    return action, rule


def decide(
    permission: str, patterns: list[str], *, ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]]
) -> str:
    """One action for a request over several patterns: any deny → deny; any ask → ask; else allow."""
    actions = set()
    for pattern in patterns or ["*"]:
        action = verdict(permission, pattern, ruleset=ruleset, org_policy=org_policy)[0]
        if action == DENY:
            return DENY
        actions.add(action)
    return ASK if ASK in actions else ALLOW


def disabled_tools(
    tool_names: list[str], ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]]
) -> set[str]:
    """Tools whose permission is denied for every pattern are not offered to the model at all: the last
    ordinary rule for the permission, or a narrowing layer's last, or an org rule, is a `*` deny.
    Edit-family tools share the `edit` permission (OpenCode)."""
    out = set()
    for name in tool_names:
        permission = permission_for_tool(name)
        last: dict[Any, dict[str, Any]] = {}
        for rule in ruleset:
            if rule.get(LAYER) != "grant" and match(rule["permission"], permission):
                last[rule.get(LAYER) if rule.get(NARROW) else NARROW] = rule
        denied = [r for r in last.values() if r["pattern"] == "*" and r["action"] == DENY]
        if denied or org_denies(permission, "*", org_policy):
            out.add(name)
    return out


def permission_for_tool(name: str) -> str:
    return "edit" if name in ("write", "edit", "apply_patch", "multiedit") else name


def tagged(rules: list[dict[str, Any]], layer: str) -> list[dict[str, Any]]:
    """`rules` with their layer and their index in it (what the preview shows)."""
    return [{**rule, LAYER: layer, "index": index} for index, rule in enumerate(rules)]


_TAGGED_DEFAULTS = tagged(DEFAULTS, "default")


def merge(
    *,
    agent: list[dict[str, Any]],
    org: list[dict[str, Any]] | None = None,
    project: Any = None,
    member: Any = None,
    session: Any = None,
) -> list[dict[str, Any]]:
    """The merged ruleset, lowest layer first: defaults, the agent's, the org's, the project's, then the
    member's and the session's (both marked narrowing). `verdict` applies the org's floor on top."""
    return (
        _TAGGED_DEFAULTS
        + tagged(agent, "agent")
        + tagged(list(org or []), "org")
        + tagged(from_config(project or []), "project")
        + narrowing(tagged(from_config(member or []), "member"))
        + narrowing(tagged(from_config(session or []), "session"))
    )


def session_ruleset(
    agent_rules: list[dict[str, Any]],
    project_rules: Any,
    session_rules: Any,
    *,
    org_rules: list[dict[str, Any]] | None = None,
    member_rules: Any = None,
) -> list[dict[str, Any]]:
    """The rules a session's agent works under (`merge`); the org's floor is applied by `decide`."""
    return merge(
        agent=agent_rules, org=org_rules, project=project_rules, member=member_rules, session=session_rules
    )


def ruleset_for(
    session: Session, agent_rules: list[dict[str, Any]], user_id: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(merged ruleset, org policy) for a check outside the loop (a slash command's shell, `!cmd`, an
    @agent mention): every layer, the member's being `user_id`'s (default: the run's person)."""
    from hangar.accounts.selectors import member_rules_of

    policy = org_policy_for(session.org)
    person = user_id if user_id is not None else (session.prompter_id or session.creator_id)
    ruleset = session_ruleset(
        agent_rules,
        session.project.permission_rules,
        session.permission,
        org_rules=policy,
        member_rules=member_rules_of(org_id=session.org_id, user_id=person),
    )
    return ruleset, policy


def org_policy_for(org: Org) -> list[dict[str, Any]]:
    """The org-wide rules (accounts.Org.permission_policy), set by admins through the API."""
    return list(org.permission_policy or [])
