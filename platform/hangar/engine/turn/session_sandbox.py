"""The session's sandbox as one run of the loop sees it: attached on first use, and what the run may
remember about the tree between its steps.

- Snapshots: the tree hash a step ends with is the next step's start (nothing else writes the workspace
  between two steps of one run), so a step costs one `snapshot_track_changed` round trip, and none when it
  used only tools that cannot write.
- Instruction files (AGENTS.md / CLAUDE.md, the root's and nested ones), the workspace's agents
  (.opencode/agents/) and its skills (.opencode/skills/) are read again only when a step changed them (or
  its snapshot failed, so what changed is unknown), and so is its opencode.json, read at the first key needed
  (`lsp`: whether file tools ask for diagnostics; `mcp`: the run lists the MCP servers' tools once, at its
  first step).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Any

from hangar.conversations.models import Session
from hangar.engine.agents.builtin import Agent
from hangar.engine.agents.custom_agents import read_workspace_agents
from hangar.engine.agents.skills import Skill, read_skills
from hangar.engine.session.dbconn import release_connection
from hangar.engine.session.system import (
    INSTRUCTION_FILES,
    instruction_paths,
    read_instruction,
    workspace_is_git,
)
from hangar.engine.tools.registry import READ_ONLY_TOOLS
from hangar.engine.workspace.opencode_config import read_workspace_config
from hangar.logging import get_logger
from sandbox.protocol import Sandbox, SandboxError, SandboxUnavailable

log = get_logger(__name__)


class SessionSandbox:
    def __init__(
        self, session: Session, sandbox_for: Callable[[Session], Sandbox], active_runs: Callable[[], int]
    ) -> None:
        self.session, self._sandbox_for, self._active_runs = session, sandbox_for, active_runs
        self._sandbox: Sandbox | None = None
        self._last_hash: str | None = None
        self._instruction_files: dict[str, str | None] = {}  # workspace-relative path → text, as read
        self._skills: list[Skill] | None = None
        self._is_git: bool | None = None
        self._agents: tuple[dict[str, Agent], list[str]] | None = None
        self._config: dict[str, Any] | None = None
        self.changed = False  # a step of this run changed files: the run ends with a diff summary

    def attach(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = self._sandbox_for(self.session)
        return self._sandbox

    def attached(self) -> Sandbox | None:
        """The sandbox if this run has attached it yet (no attach)."""
        return self._sandbox

    def step_start(self) -> str | None:
        """The tree hash the step starts from (None: the snapshot failed; the step runs without one)."""
        if self._last_hash is not None:
            return self._last_hash
        # The first snapshot may attach (or create) the sandbox: under a burst of sessions that takes a
        # while, and a pooled DB connection must not be held idle meanwhile.
        release_connection(self._active_runs())
        try:
            return self.attach().snapshot_track()
        except SandboxError:
            log.warning("snapshot_failed", session=self.session.pk, exc_info=True)
            return None

    def step_end(self, start: str | None, tools_used: set[str]) -> tuple[str | None, list[str]]:
        """The tree at the end of the step and the workspace-relative paths changed since `start`."""
        if start and not tools_used - READ_ONLY_TOOLS:
            self._last_hash = start
            return start, []
        try:
            end, changed = self.attach().snapshot_track_changed(start)  # one round trip
        except SandboxError:
            log.warning("snapshot_failed", session=self.session.pk, exc_info=True)
            end, changed = None, []
        self._last_hash = end
        self.changed = self.changed or bool(changed)
        if end is None:
            self._instruction_files.clear()
        for path in changed:
            if PurePosixPath(path).name in INSTRUCTION_FILES:
                self._instruction_files.pop(path, None)
        if end is None or any(path.startswith(".opencode/agent") for path in changed):
            self._agents = None
        if end is None or any(path.startswith(".opencode/skills/") for path in changed):
            self._skills = None
        if end is None or "opencode.json" in changed:
            self._config = None
        return end, changed

    def instructions(self, dirs: Iterable[str] = ()) -> list[list[str]] | None:
        """[path, text] of each instruction file in effect: the root's, and those of `dirs` (workspace-
        relative directories the agent has read files in) and their parents. None: the sandbox could not
        answer (the caller keeps the instructions it last sent)."""
        paths = instruction_paths(dirs)
        files = self._instruction_files
        try:
            for path in paths:
                if path not in files:
                    files[path] = read_instruction(self.attach(), path)
        except SandboxUnavailable:
            log.warning("instructions_unavailable", session=self.session.pk, exc_info=True)
            return None
        return [[f"/workspace/{path}", text] for path in paths if (text := files[path]) is not None]

    def skills(self) -> list[Skill]:
        if self._skills is None:
            self._skills = read_skills(self._attach_releasing())
        return self._skills

    def custom_agents(self) -> tuple[dict[str, Agent], list[str]]:
        """The workspace's own agents, and why any file of theirs could not be used."""
        if self._agents is None:
            self._agents = read_workspace_agents(self._attach_releasing())
        return self._agents

    def workspace_config(self) -> dict[str, Any]:
        """The workspace's opencode.json (hangar.engine.workspace.opencode_config), read again only after a
        step changed it."""
        if self._config is None:
            self._config = read_workspace_config(self._attach_releasing())
        return self._config

    def workspace_mcp(self) -> Any:
        """Its `mcp` key (hangar.engine.mcp.servers)."""
        return self.workspace_config().get("mcp")

    def workspace_lsp(self) -> Any:
        """Its `lsp` key (hangar.engine.tools.diagnostics)."""
        return self.workspace_config().get("lsp")

    def workspace_formatter(self) -> Any:
        """Its `formatter` key (hangar.engine.tools.formatting)."""
        return self.workspace_config().get("formatter")

    def _attach_releasing(self) -> Sandbox:
        """attach, for a read before the step's first snapshot: attaching may take a while, and no pooled
        DB connection is held idle meanwhile."""
        if self._sandbox is None:
            release_connection(self._active_runs())
        return self.attach()

    def is_git(self) -> bool:
        """Whether the workspace is a git repository (a project's clone is): once per run."""
        if self._is_git is None:
            self._is_git = workspace_is_git(self.attach())
        return self._is_git
