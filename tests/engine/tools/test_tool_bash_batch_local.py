"""bash permission patterns, batch, invalid and the todo tools (local sandbox and the real DB)."""

import re

import pytest

from hangar.engine.tools.base import PermissionAsked, ToolError, ToolResult
from hangar.engine.tools.bash import permission_patterns
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL, get_tools


def test_bash_asks_one_pattern_per_command_and_suggests_prefixes_for_always():
    assert permission_patterns("ls -la") == (["ls -la"], ["ls *"])
    assert permission_patterns("cd src && git status --short | head -5") == (
        ["git status --short", "head -5"],
        ["git status *", "head *"],
    )
    # An assignment prefix stays in the pattern: it changes what the command does (LD_PRELOAD, PAGER).
    assert permission_patterns("FOO=1 npm run build; echo 'a b'") == (
        ["FOO=1 npm run build", "echo a b"],
        ["npm run *", "echo *"],
    )
    assert permission_patterns("cd /tmp") == ([], [])


def test_bash_runs_in_the_workdir_and_reports_the_exit_code(local):
    local.sandbox.mkdir("/workspace/sub")
    result = execute_tool(
        ALL["bash"], {"command": "pwd; exit 3", "workdir": "sub", "description": "Show dir"}, local.ctx()
    )
    assert result.output.strip().endswith("/workspace/sub")
    assert result.metadata["exit"] == 3 and result.title == "Show dir"
    (ask,) = local.asked("bash")
    assert ask["patterns"] == ["pwd", "exit 3"] and ask["always"] == ["pwd *", "exit *"]


def test_bash_rejects_a_negative_timeout(local):
    with pytest.raises(ToolError, match="Invalid timeout value: -5"):
        execute_tool(ALL["bash"], {"command": "true", "timeout": -5, "description": "x"}, local.ctx())


def test_batch_runs_calls_in_parallel_and_reports_each(local):
    local.sandbox.write("/workspace/a.txt", "alpha\n")
    tools = get_tools("build", "claude")
    result = execute_tool(
        ALL["batch"],
        {
            "tool_calls": [
                {"tool": "read", "parameters": {"filePath": "/workspace/a.txt"}},
                {"tool": "grep", "parameters": {"pattern": "alpha"}},
                {"tool": "read", "parameters": {"filePath": "/workspace/missing.txt"}},
                {"tool": "batch", "parameters": {"tool_calls": []}},
                {"tool": "websearch", "parameters": {}},
            ]
        },
        local.ctx(tools=tools),
    )
    assert result.title == "Batch execution (2/5 successful)"
    assert result.output == "Executed 2/5 tools successfully. 3 failed."
    details = result.metadata["details"]
    assert [d["success"] for d in details] == [True, True, False, False, False]
    assert "not allowed in batch" in details[3]["error"]
    assert "not in registry" in details[4]["error"] and "Available tools: bash" in details[4]["error"]
    assert {a["permission"] for a in local.asks} == {"read", "grep"}  # each sub-call checked on its own


def test_batch_uses_the_loops_subcall_runner_and_caps_at_25(local):
    seen = []

    def run_subcall(tool, parameters, *, index):
        seen.append((index, tool))
        return ToolResult(title=tool, output="ok")

    tools = get_tools("build", "claude")
    calls = [{"tool": "glob", "parameters": {"pattern": "*"}} for _ in range(27)]
    result = execute_tool(
        ALL["batch"], {"tool_calls": calls}, local.ctx(tools=tools, run_subcall=run_subcall)
    )
    assert sorted(seen) == [(i, "glob") for i in range(25)]
    assert result.metadata["totalCalls"] == 27 and result.metadata["failed"] == 2
    assert result.metadata["details"][26]["error"] == "Maximum of 25 tools allowed in batch"


def test_a_sub_call_waiting_for_permission_parks_the_whole_batch(local):
    local.policy["bash"] = "ask"
    tools = get_tools("build", "claude")
    with pytest.raises(PermissionAsked):
        execute_tool(
            ALL["batch"],
            {
                "tool_calls": [
                    {"tool": "glob", "parameters": {"pattern": "*"}},
                    {"tool": "bash", "parameters": {"command": "ls", "description": "List"}},
                ]
            },
            local.ctx(tools=tools),
        )


def test_batch_refuses_to_run_inside_a_batch(local):
    with pytest.raises(ToolError, match="not allowed in batch"):
        execute_tool(
            ALL["batch"],
            {"tool_calls": [{"tool": "read", "parameters": {}}]},
            local.ctx(in_batch=True, tools={}),
        )


def test_invalid_tells_the_model_what_was_wrong(local):
    result = execute_tool(
        ALL["invalid"], {"tool": "Frobnicate", "error": "Model tried to call unavailable tool"}, local.ctx()
    )
    assert result.title == "Invalid Tool"
    assert (
        result.output
        == "The arguments provided to the tool are invalid: Model tried to call unavailable tool"
    )


@pytest.fixture
def session(alice):
    from hangar.conversations.services import session_create

    return session_create(actor=alice.actor, project=alice.project)


def test_todowrite_replaces_the_sessions_list_and_todoread_returns_it(local, session):
    todos = [
        {"content": "Write tests", "status": "in_progress", "priority": "high"},
        {"content": "Ship", "status": "pending", "priority": "low"},
    ]
    written = execute_tool(ALL["todowrite"], {"todos": todos}, local.ctx(session=session))
    assert written.title == "2 todos" and written.metadata["todos"] == todos
    todos[0]["status"] = "completed"
    execute_tool(ALL["todowrite"], {"todos": todos}, local.ctx(session=session))
    read = execute_tool(ALL["todoread"], {}, local.ctx(session=session))
    assert read.metadata["todos"] == todos and read.title == "1 todos"
    assert [a["permission"] for a in local.asks] == ["todowrite", "todowrite", "todoread"]


def test_todowrite_rejects_an_unknown_status(local, session):
    with pytest.raises(ToolError, match=re.escape("todos.0.status")):
        execute_tool(
            ALL["todowrite"],
            {"todos": [{"content": "x", "status": "doing", "priority": "high"}]},
            local.ctx(session=session),
        )


def test_parallel_edits_of_one_file_in_a_batch_both_land(local):
    local.sandbox.write("/workspace/same.py", "a = 1\nb = 1\n")
    local.read_paths.add("/workspace/same.py")
    result = execute_tool(
        ALL["batch"],
        {
            "tool_calls": [
                {
                    "tool": "edit",
                    "parameters": {"filePath": "same.py", "oldString": "a = 1", "newString": "a = 2"},
                },
                {
                    "tool": "edit",
                    "parameters": {"filePath": "same.py", "oldString": "b = 1", "newString": "b = 2"},
                },
            ]
        },
        local.ctx(tools=get_tools("build", "claude")),
    )
    assert result.metadata["successful"] == 2
    assert local.sandbox.read_bytes("/workspace/same.py") == b"a = 2\nb = 2\n"
