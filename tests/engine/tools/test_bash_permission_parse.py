"""The bash tool's permission check reads the command as the shell does (tree-sitter's bash grammar):
every simple command is a pattern the rules see, wherever it hides (quoted `$(…)`, backticks, a
`VAR="$(…)"` prefix, a heredoc, a function body), quoting a command's name does not change it, and a
path outside the workspace (an argument, a redirection, a `cd`, the workdir) asks `external_directory`.

Table-driven against a real Docker sandbox, with the real rule evaluation (`permissions.decide`) over
an org-style ruleset that allows everything but `rm` and `curl`: each bypass attempt is refused before
anything runs, and the canary file is still there."""

from __future__ import annotations

import time

import pytest

from hangar.engine.agents import permissions as perm
from hangar.engine.agents.shell_parse import check
from hangar.engine.tools.base import PermissionRejected
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL
from tests.engine.tools.conftest import Harness

RULES = [
    *perm.DEFAULTS,
    {"permission": "bash", "pattern": "rm *", "action": "deny"},
    {"permission": "bash", "pattern": "curl *", "action": "deny"},
    {"permission": "external_directory", "pattern": "*", "action": "deny"},
]
CANARY = "/workspace/canary-parse.txt"

BYPASSES = [
    ("a quoted substitution", f'echo "$(rm -f {CANARY})"'),
    ("backticks", f"echo `rm -f {CANARY}`"),
    ("quoted backticks", f'echo "`rm -f {CANARY}`"'),
    ("an assignment prefix", f'X="$(rm -f {CANARY})" ls'),
    ("an export", f"export X=$(rm -f {CANARY})"),
    ("a quoted command name", f'"rm" -f {CANARY}'),
    ("an empty quote inside the name", f"r''m -f {CANARY}"),
    ("a backslash in the name", f"\\rm -f {CANARY}"),
    ("an ANSI-C quoted name", f"$'\\x72m' -f {CANARY}"),
    ("a heredoc", f"cat <<EOF\n$(rm -f {CANARY})\nEOF"),
    ("a function body", f"f() {{ rm -f {CANARY}; }}; f"),
    ("a subshell", f"(true; rm -f {CANARY})"),
    ("a process substitution", f"cat <(rm -f {CANARY})"),
    ("a test expression", f"[[ -n $(rm -f {CANARY}) ]]"),
    ("a line continuation", f"r\\\nm -f {CANARY}"),
    ("a cd into a substitution", f'cd "$(echo /)" && echo x > {CANARY.lstrip("/")}'),
    ("a relative path out of the workspace", "cat ../etc/hostname > /workspace/canary-parse.txt"),
    ("a redirection outside the workspace", "true > /tmp/escape-parse.txt"),
    ("a cd outside the workspace", f"cd /tmp && touch x && echo gone > {CANARY}"),
]


def rules_ask(harness: Harness):
    """The loop's decision on each ask: the real rule evaluation over RULES."""

    def ask(permission, patterns, always, metadata):
        harness.asks.append({"permission": permission, "patterns": patterns, "always": always})
        if perm.decide(permission, patterns, ruleset=RULES, org_policy=[]) == perm.DENY:
            raise PermissionRejected(f"{permission} denied", feedback="no")

    return ask


@pytest.mark.parametrize(("name", "command"), BYPASSES, ids=[b[0] for b in BYPASSES])
def test_it_refuses_a_denied_command_however_the_line_hides_it(docker, name, command):
    docker.sandbox.write(CANARY, "kept\n")
    docker.ask = rules_ask(docker)
    with pytest.raises(PermissionRejected):
        execute_tool(ALL["bash"], {"command": command, "description": name}, docker.ctx())
    assert docker.sandbox.read(CANARY).content == "kept"  # nothing ran


def test_it_asks_external_directory_for_a_workdir_outside_the_workspace(docker):
    docker.ask = rules_ask(docker)
    with pytest.raises(PermissionRejected):
        execute_tool(ALL["bash"], {"command": "ls", "workdir": "/etc", "description": "list"}, docker.ctx())
    assert docker.asked("external_directory")[0]["patterns"] == ["/etc/*"]


def test_it_still_runs_an_allowed_line_and_asks_each_command_once(docker):
    docker.ask = rules_ask(docker)
    result = execute_tool(
        ALL["bash"],
        {"command": 'cd sub 2>/dev/null; X="$(echo hi)"; printf "%s" "$X" | cat', "description": "x"},
        docker.ctx(),
    )
    assert result.output == "hi"
    (ask,) = docker.asked("bash")
    assert ask["patterns"] == ["echo hi", 'printf %s "$X"', "cat"]
    assert ask["always"] == ["echo *", "printf *", "cat *"]
    assert not docker.asked("external_directory")


def test_the_parse_costs_well_under_a_millisecond_per_command():
    line = 'cd src && X="$(git rev-parse HEAD)" npm run build -- --out /tmp/x 2>&1 | tee log.txt'
    check(line)  # warm
    rounds = 500
    start = time.perf_counter()
    for _ in range(rounds):
        check(line)
    per_call_ms = (time.perf_counter() - start) / rounds * 1000
    assert per_call_ms < 1.0, per_call_ms
