"""Workspace and project agent definitions are untrusted text: a YAML alias bomb, a deep nesting, a value
of any size or an `options` of any shape is refused with a short error naming the file and the reason,
never expanded, walked by `repr` or left to crash the process that read it."""

from __future__ import annotations

import time

import pytest

from hangar.agent_config import AgentConfigError, clean_agent_fields
from hangar.engine.agents.custom_agents import agent_from_fields, split_frontmatter

WHERE = ".opencode/agents/bomb.md"


def alias_bomb(levels: int) -> str:
    """Billion laughs: each level lists the one before nine times, all hidden in a bad permission rule."""
    chain = ['&a0 "lol"'] + [f"&a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    rule = f"{{permission: 1, pattern: x, action: allow, junk: [{', '.join(chain)}]}}"
    return f"---\npermission: [{rule}]\n---\nbody\n"


def parse(text: str) -> None:
    meta, body = split_frontmatter(text, WHERE)
    agent_from_fields("bomb", meta, WHERE, prompt=body)


def test_it_refuses_a_yaml_alias_bomb_with_a_short_error_and_expands_nothing():
    text = alias_bomb(7)  # about 700 bytes; expanded and repr'd, some 30 MB
    assert len(text) < 1000
    started = time.monotonic()
    with pytest.raises(AgentConfigError) as caught:
        parse(text)
    message = str(caught.value)
    assert len(message) < 300, f"an error of {len(message)} characters"
    assert message.startswith(f"{WHERE}: ") and "alias" in message
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    "frontmatter, problem",
    [
        ("options: " + "[" * 5000 + "]" * 5000, "nests deeper than"),
        ("description: " + "{a: " * 5000 + "1" + "}" * 5000, "nests deeper than"),
        ("options: {a: !!float x}", "not valid YAML"),
        ("options: [1, 2]", "options must be a mapping"),
        ("options: {when: 2024-01-01}", "options must hold only text, numbers, true/false"),
        ("options: {big: " + "x" * 70_000 + "}", "at most"),
    ],
)
def test_it_refuses_any_frontmatter_it_cannot_bound_naming_the_file(frontmatter, problem):
    with pytest.raises(AgentConfigError) as caught:
        parse(f"---\n{frontmatter}\n---\nbody\n")
    message = str(caught.value)
    assert message.startswith(f"{WHERE}: ") and problem in message, message
    assert len(message) < 300


def test_a_project_agent_config_is_bounded_the_same_way():
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(AgentConfigError, match=r"^agents\.docs: options nests deeper than"):
        clean_agent_fields("docs", {"options": deep}, "agents.docs")
    wide = {"permission": [{"permission": "bash", "pattern": "x" * 600, "action": "allow"}] * 3}
    with pytest.raises(AgentConfigError) as caught:
        clean_agent_fields("docs", wide, "agents.docs")
    assert "xxxxxxxx" not in str(caught.value)  # the rule is named by its place, never printed back
    assert "permission rule 1" in str(caught.value)
    fine = clean_agent_fields("docs", {"options": {"reasoningEffort": "high", "n": [1, 2]}}, "agents.docs")
    assert fine["name"] == "docs"


def test_a_workspace_agent_file_only_narrows_the_asks_around_it(tmp_path):
    """A file in the workspace is anyone's who can push to the repository, and the model's own writes: its
    agent's rules may make a decision stricter (deny) but never skip an ask (the defaults' or the
    project's). A project agent (an admin's config) keeps its allow."""
    from hangar.engine.agents import permissions as perm
    from hangar.engine.agents.custom_agents import project_agents, read_workspace_agents
    from tests.engine.tools.local_sandbox import LocalSandbox

    folder = tmp_path / "workspace" / ".opencode" / "agents"
    folder.mkdir(parents=True)
    (folder / "loose.md").write_text(
        "---\npermission:\n  external_directory: allow\n  bash: allow\n  edit: deny\n---\nLoose.\n"
    )
    (agents, errors) = read_workspace_agents(LocalSandbox(tmp_path))
    assert not errors
    rules = perm.session_ruleset(
        agents["loose"].permission, [{"permission": "bash", "pattern": "*", "action": "ask"}], []
    )

    def decide(permission: str, pattern: str) -> str:
        return perm.decide(permission, [pattern], ruleset=rules, org_policy=[])

    assert decide("external_directory", "/etc/passwd") == "ask"  # the default's ask stays
    assert decide("bash", "rm -rf /") == "ask"  # the project's ask stays
    assert decide("edit", "a.py") == "deny"  # narrowing works

    admin = project_agents({"docs": {"permission": {"external_directory": "allow"}}})["docs"]
    admin_rules = perm.session_ruleset(admin.permission, [], [])
    assert perm.decide("external_directory", ["/x"], ruleset=admin_rules, org_policy=[]) == "allow"
