"""The one merge (hangar.engine.agents.permissions, docs/permissions.md), table-driven: for every pair of layers
(defaults, agent, org, project, member, session, grant), each holding one matching rule with each action,
the decision the loop takes, the decision the preview shows, and the rule the preview names. The expected
outcomes are written out as tables, one per kind of pair, not worked out by the code under test."""

from itertools import combinations, product

import pytest

from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin import Agent
from hangar.engine.agents.permission_preview import preview

LAYERS = ("default", "agent", "org", "project", "member", "session", "grant")
ACTIONS = ("allow", "ask", "deny")

# The built-in defaults cannot be rewritten per case: a case with the default layer picks a request the
# defaults answer with the action wanted.
DEFAULT_REQUEST = {
    "allow": ("bash", "ls"),
    "ask": ("external_directory", "/etc/x"),
    "deny": ("question", "q"),
}

# Rows: the upper layer's action, columns: the lower layer's (allow, ask, deny).
LATER_WINS = {
    "allow": ("allow", "ask", "deny"),
    "ask": ("allow", "ask", "deny"),
    "deny": ("allow", "ask", "deny"),
}
ONLY_NARROWS = {
    "allow": ("allow", "ask", "deny"),
    "ask": ("ask", "ask", "deny"),
    "deny": ("deny", "deny", "deny"),
}
# An org floor over any layer below it: its deny wins, its ask cannot be loosened, its allow is narrowed.
ORG_FLOOR = ONLY_NARROWS
# A grant only ever allows: it answers an ask (a person said "always"), never a deny, never an org ask.
GRANT = {"allow": "allow", "ask": "allow", "deny": "deny"}
ORG_THEN_GRANT = {"allow": "allow", "ask": "ask", "deny": "deny"}

ORDINARY = {"default", "agent", "project"}
NARROWING = {"member", "session"}


def expected(upper: str, lower: str, a: str, b: str) -> str:
    if lower == "grant":
        return (ORG_THEN_GRANT if upper == "org" else GRANT)[a]
    column = ACTIONS.index(b)
    if upper == "org":
        return ORG_FLOOR[a][column]
    if lower in NARROWING:
        return ONLY_NARROWS[a][column]
    assert upper in ORDINARY | NARROWING and lower in ORDINARY | {"org"}
    return LATER_WINS[a][column]


def cases():
    for upper, lower in combinations(LAYERS, 2):
        for a, b in product(ACTIONS, ("allow",) if lower == "grant" else ACTIONS):
            yield pytest.param(upper, lower, a, b, id=f"{upper}:{a}-{lower}:{b}")


def layers_for(upper: str, lower: str, a: str, b: str) -> tuple[str, str, dict]:
    permission, pattern = DEFAULT_REQUEST[a] if upper == "default" else ("bash", "ls")
    rules: dict = {layer: [] for layer in LAYERS}
    for layer, action in ((upper, a), (lower, b)):
        if layer != "default":
            rules[layer] = [{"permission": permission, "pattern": "*", "action": action}]
    return permission, pattern, rules


@pytest.mark.parametrize(("upper", "lower", "a", "b"), list(cases()))
def test_every_pair_of_layers_merges_as_documented(upper, lower, a, b):
    permission, pattern, rules = layers_for(upper, lower, a, b)
    ruleset = perm.merge(
        agent=rules["agent"],
        org=rules["org"],
        project=rules["project"],
        member=rules["member"],
        session=rules["session"],
    ) + perm.tagged(rules["grant"], "grant")
    want = expected(upper, lower, a, b)
    assert perm.decide(permission, [pattern], ruleset=ruleset, org_policy=rules["org"]) == want
    if lower == "grant":
        return  # grants belong to one session: the preview has no such layer
    shown = preview(
        agent=Agent("t", "primary", permission=rules["agent"]),
        permission=permission,
        pattern=pattern,
        project_rules=rules["project"],
        org_policy=rules["org"],
        member_rules=rules["member"],
        session_rules=rules["session"],
    )
    assert shown["action"] == want
    # The rule named is one of the pair's, holding the action decided (or, when narrowing layers allow,
    # the built-in `* allow` beneath them: a narrowing allow never decides).
    assert shown["decided_by"]["layer"] in (upper, lower, "default")
    assert shown["decided_by"]["rule"]["action"] == want
    assert [m["layer"] for m in shown["matched"] if m["applies"]] == [shown["decided_by"]["layer"]]


def test_an_org_deny_wins_over_the_orgs_own_later_allow_but_its_ask_yields_to_its_own_later_allow():
    org = [
        {"permission": "bash", "pattern": "*", "action": "ask"},
        {"permission": "bash", "pattern": "git *", "action": "allow"},
        {"permission": "bash", "pattern": "rm *", "action": "deny"},
        {"permission": "bash", "pattern": "rm -i *", "action": "allow"},
    ]
    ruleset = perm.merge(
        agent=[], org=org, project=[{"permission": "bash", "pattern": "*", "action": "allow"}]
    )
    decide = lambda pattern: perm.decide("bash", [pattern], ruleset=ruleset, org_policy=org)  # noqa: E731
    assert decide("git status") == "allow"  # the org's own later allow: its ask no longer matches last
    assert decide("ls") == "ask"  # the org's ask: the project's allow cannot loosen it
    assert decide("rm -i x") == "deny"  # an org deny wins everywhere, the org's own later rules included


def test_a_member_allow_does_not_loosen_a_session_ask_nor_a_session_allow_a_member_ask():
    ask_bash = [{"permission": "bash", "pattern": "*", "action": "ask"}]
    allow_bash = [{"permission": "bash", "pattern": "*", "action": "allow"}]
    for member, session in ((ask_bash, allow_bash), (allow_bash, ask_bash)):
        ruleset = perm.merge(agent=[], member=member, session=session)
        assert perm.decide("bash", ["ls"], ruleset=ruleset, org_policy=[]) == "ask"


def test_a_tool_a_narrowing_layer_or_the_org_denies_outright_is_not_offered():
    deny_bash = [{"permission": "bash", "pattern": "*", "action": "deny"}]
    allow_git = [{"permission": "bash", "pattern": "git *", "action": "allow"}]
    assert perm.disabled_tools(["bash"], perm.merge(agent=[], member=deny_bash, session=allow_git), []) == {
        "bash"
    }
    assert perm.disabled_tools(["bash"], perm.merge(agent=[], project=deny_bash + allow_git), []) == set()
    assert perm.disabled_tools(["bash"], perm.merge(agent=[], org=deny_bash), deny_bash) == {"bash"}
