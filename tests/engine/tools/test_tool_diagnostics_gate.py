"""Whether a file tool asks the sandbox for diagnostics: never for a language without a server, never
under HANGAR_LSP=off, and, where the run knows its workspace's opencode.json `lsp` key, only when that key
turns the servers on (in "auto": set and not false; in "on": not false) — each round trip the gate saves
is a step's time."""

import pytest

from hangar.engine.tools.base import EXTRA_LSP
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL
from tests.engine.tools.conftest import Harness
from tests.engine.tools.local_sandbox import LocalSandbox


class CountingSandbox(LocalSandbox):
    def __init__(self, root):
        super().__init__(root)
        self.touched: list[tuple[str, str]] = []

    def lsp_touch(self, path, *, wait_ms=3000, mode="auto") -> dict:
        self.touched.append((path, mode))
        return {}


@pytest.mark.parametrize(
    ("mode", "workspace_lsp", "asks"),
    [
        ("auto", None, False),
        ("auto", False, False),
        ("auto", True, True),
        ("auto", {"pyright": {"disabled": True}}, True),  # the sandbox applies per-server `disabled`
        ("on", None, True),
        ("on", False, False),
        ("off", True, False),
    ],
)
def test_a_write_asks_for_diagnostics_only_when_the_workspace_turns_servers_on(
    tmp_path, settings, mode, workspace_lsp, asks
):
    settings.HANGAR_LSP = mode
    harness = Harness(CountingSandbox(tmp_path))
    ctx = harness.ctx(**{EXTRA_LSP: lambda: workspace_lsp})
    execute_tool(ALL["write"], {"filePath": "/workspace/a.py", "content": "x = 1\n"}, ctx)
    assert harness.sandbox.touched == ([("/workspace/a.py", mode)] if asks else [])


def test_without_the_runs_config_the_sandbox_decides_and_other_languages_cost_nothing(tmp_path, settings):
    settings.HANGAR_LSP = "auto"
    harness = Harness(CountingSandbox(tmp_path))
    execute_tool(ALL["write"], {"filePath": "/workspace/a.py", "content": "x = 1\n"}, harness.ctx())
    execute_tool(ALL["write"], {"filePath": "/workspace/notes.md", "content": "hi\n"}, harness.ctx())
    assert harness.sandbox.touched == [("/workspace/a.py", "auto")]
