"""File tools ask `external_directory` (OpenCode's rule, default ask) for a path outside the workspace,
for its folder; the workspace and the tools' own truncated-output files need no such answer."""

import pytest

from hangar.engine.agents import permissions as perm
from hangar.engine.tools.base import PermissionAsked
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL


@pytest.mark.parametrize(
    "tool, args, folder",
    [
        ("read", {"filePath": "/etc/passwd"}, "/etc/*"),
        ("write", {"filePath": "/etc/cron.d/evil", "content": "x"}, "/etc/cron.d/*"),
        ("edit", {"filePath": "/root/.bashrc", "oldString": "a", "newString": "b"}, "/root/*"),
        ("list", {"path": "/home"}, "/home/*"),
        ("glob", {"pattern": "*", "path": "/var"}, "/var/*"),
        ("grep", {"pattern": "x", "path": "/srv"}, "/srv/*"),
    ],
)
def test_file_tools_ask_external_directory_outside_the_workspace(local, tool, args, folder):
    local.policy["external_directory"] = "ask"
    with pytest.raises(PermissionAsked):
        execute_tool(ALL[tool], args, local.ctx())
    assert local.asked("external_directory")[0]["patterns"] == [folder]


def test_inside_the_workspace_and_truncated_outputs_need_no_external_directory(local):
    local.policy["external_directory"] = "ask"
    local.sandbox.write("/workspace/in.txt", "x\n")
    execute_tool(ALL["read"], {"filePath": "/workspace/in.txt"}, local.ctx())
    assert local.asked("external_directory") == []
    assert perm.evaluate("external_directory", "/tmp/hangar/tool-output/*", perm.DEFAULTS) == perm.ALLOW
