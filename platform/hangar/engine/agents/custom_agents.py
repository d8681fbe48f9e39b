"""Agents a team defines (seed 003 "Extensibility"), beside the built-in ones: in the workspace, one
Markdown file per agent under `.opencode/agents/` (or OpenCode's older `.opencode/agent/`), YAML
frontmatter then the agent's prompt; and the project's `agents` config, the same fields as JSON
(hangar.agent_config checks both).

    ---
    description: Reviews changes without editing them
    mode: subagent            # primary | subagent | all (default: all)
    model: anthropic/claude-sonnet-4
    temperature: 0.1
    steps: 8                  # max agentic steps (OpenCode's older `maxSteps` too)
    permission:               # OpenCode's config shape, or a list of {permission, pattern, action}
      edit: deny
      bash: {"git diff*": allow, "*": ask}
    tools: {write: false}     # OpenCode's older switch: false denies the tool
    ---
    You are a careful reviewer...

A built-in name wins over a custom one, and the project's over the workspace's. A workspace file is anyone's
who can push to the repository (and the model's own writes): its agent's permission rules only narrow
(hangar.engine.agents.permissions.narrowing), so `bash: allow` there never skips the defaults' or the project's
ask; a project agent, an admin's config, is taken as written. A file that does not parse is an error naming the file and the
problem, never a crash: the agent is then unknown, and asking for it is refused with that message.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePosixPath
from typing import Any

from hangar.agent_config import AgentConfigError, clean_agent_fields, load_frontmatter
from hangar.engine.agents.builtin import AGENTS, Agent
from hangar.engine.agents.permissions import narrowing
from sandbox.protocol import Sandbox, SandboxError

AGENT_DIRS = ("/workspace/.opencode/agents", "/workspace/.opencode/agent")
MAX_FILE_BYTES = 64 * 1024
MAX_AGENTS = 100


class UnknownAgent(LookupError):
    pass


def split_frontmatter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a Markdown file; a file without frontmatter is all body."""
    if not text.startswith("---"):
        return {}, text.strip()
    parts = re.split(r"^---[ \t]*$", text, maxsplit=2, flags=re.MULTILINE)
    if len(parts) < 3:
        raise AgentConfigError(f"{where}: the frontmatter is not closed by a line of ---")
    return load_frontmatter(parts[1], where, line_offset=1), parts[2].strip()


def read_definition(sandbox: Sandbox, path: str) -> tuple[dict[str, Any], str, str]:
    """(frontmatter, body, workspace-relative path) of one Markdown definition in the workspace (an
    agent, a command, a skill), bounded; AgentConfigError naming the file when it cannot be read."""
    where = path.removeprefix("/workspace/")
    try:
        text = sandbox.read_bytes(path, max_bytes=MAX_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise AgentConfigError(f"{where}: not UTF-8 text") from None
    except SandboxError as exc:
        raise AgentConfigError(f"{where}: {exc}") from exc
    meta, body = split_frontmatter(text, where)
    return meta, body, where


def agent_from_fields(name: str, fields: dict[str, Any], where: str, prompt: str = "") -> Agent:
    """An Agent from a file's frontmatter and body (or a project's config), every field checked."""
    return Agent(**clean_agent_fields(name, fields, where, prompt))


def read_workspace_agents(sandbox: Sandbox) -> tuple[dict[str, Agent], list[str]]:
    """The workspace's agents and, for each file that could not be used, why. One glob for both folders;
    bounded: at most MAX_AGENTS files of at most MAX_FILE_BYTES each."""
    try:
        paths, _ = sandbox.glob("agent*/*.md", "/workspace/.opencode")
    except SandboxError:
        return {}, []
    agents: dict[str, Agent] = {}
    errors: list[str] = []
    for path in sorted(p for p in paths if str(PurePosixPath(p).parent) in AGENT_DIRS)[:MAX_AGENTS]:
        name = PurePosixPath(path).stem
        if name in agents or name in AGENTS:
            continue
        try:
            meta, body, where = read_definition(sandbox, path)
            if not meta.get("disable"):
                agent = agent_from_fields(name, meta, where, prompt=body)
                agents[name] = dataclasses.replace(agent, permission=narrowing(agent.permission))
        except AgentConfigError as exc:
            errors.append(str(exc))
    return agents, errors


def project_agents(config: dict[str, Any] | None) -> dict[str, Agent]:
    """The project's `agents` config (checked when it was saved; one that no longer checks is left out)."""
    agents = {}
    for name, fields in (config or {}).items():
        if name in AGENTS or not isinstance(fields, dict) or fields.get("disable"):
            continue
        try:
            agents[name] = agent_from_fields(name, fields, f"agents.{name}")
        except AgentConfigError:
            continue
    return agents


def resolve_agent(
    name: str,
    workspace: tuple[dict[str, Agent], list[str]] | None,
    project: dict[str, Agent] | None = None,
) -> Agent:
    """The agent called `name`: built in, else the project's, else the workspace's
    (`workspace`: read_workspace_agents). UnknownAgent says which agents there are or, for a file that did
    not parse, why."""
    if name in AGENTS:
        return AGENTS[name]
    if project and name in project:
        return project[name]
    found, errors = workspace or ({}, [])
    if name in found:
        return found[name]
    mine = [e for e in errors if PurePosixPath(e.split(":", 1)[0]).stem == name]
    if mine:
        raise UnknownAgent(f"agent {name!r} cannot be used: {mine[0]}")
    known = sorted({*(a.name for a in AGENTS.values() if not a.hidden), *(project or {}), *found})
    raise UnknownAgent(f"no agent named {name!r}: one of {', '.join(known)}")
