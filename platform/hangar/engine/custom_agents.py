"""Agents a team defines (seed 003 "Extensibility"), beside the built-in ones: in the workspace, one
Markdown file per agent under `.opencode/agents/` (or OpenCode's older `.opencode/agent/`), YAML
frontmatter then the agent's prompt.

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

A built-in name wins over a custom one. A file that does not parse is an error naming the file and the
problem, never a crash: the agent is then unknown, and asking for it is refused with that message.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import yaml

from hangar.engine.agents import AGENTS, Agent
from hangar.engine.permissions import from_config
from sandbox.protocol import Sandbox, SandboxError

AGENT_DIRS = ("/workspace/.opencode/agents", "/workspace/.opencode/agent")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_FILE_BYTES = 64 * 1024
MAX_AGENTS = 100
MODES = ("primary", "subagent", "all")
ACTIONS = ("allow", "ask", "deny")
FIELDS = {
    "description",
    "mode",
    "model",
    "temperature",
    "steps",
    "maxSteps",
    "permission",
    "tools",
    "prompt",
    "hidden",
    "disable",
    "color",
    "top_p",
    "options",
}


class AgentConfigError(ValueError):
    """An agent definition that cannot be used; the message names where and why."""


class UnknownAgent(LookupError):
    pass


def split_frontmatter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a Markdown file; a file without frontmatter is all body."""
    if not text.startswith("---"):
        return {}, text.strip()
    parts = re.split(r"^---[ \t]*$", text, maxsplit=2, flags=re.MULTILINE)
    if len(parts) < 3:
        raise AgentConfigError(f"{where}: the frontmatter is not closed by a line of ---")
    try:
        meta = yaml.safe_load(parts[1]) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 2})" if mark is not None else ""
        raise AgentConfigError(f"{where}: the frontmatter is not valid YAML{at}") from None
    if not isinstance(meta, dict):
        raise AgentConfigError(f"{where}: the frontmatter must be a mapping of fields")
    return meta, parts[2].strip()


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
    """An Agent from a file's frontmatter and body, every field checked."""
    if not NAME.fullmatch(name):
        raise AgentConfigError(f"{where}: an agent name is letters, digits, '.', '_' and '-' (at most 64)")
    unknown = set(fields) - FIELDS
    if unknown:
        raise AgentConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    mode = fields.get("mode", "all")
    if mode not in MODES:
        raise AgentConfigError(f"{where}: mode must be one of {', '.join(MODES)}")
    description = fields.get("description", "")
    if not isinstance(description, str) or len(description) > 2000:
        raise AgentConfigError(f"{where}: description must be a string of at most 2000 characters")
    steps = fields.get("steps", fields.get("maxSteps"))
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 0 < steps <= 1000):
        raise AgentConfigError(f"{where}: steps must be a whole number from 1 to 1000")
    temperature = fields.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 2
    ):
        raise AgentConfigError(f"{where}: temperature must be a number from 0 to 2")
    prompt = fields.get("prompt", prompt)
    if not isinstance(prompt, str) or len(prompt) > MAX_FILE_BYTES:
        raise AgentConfigError(f"{where}: the prompt must be text of at most {MAX_FILE_BYTES} bytes")
    return Agent(
        name=name,
        mode=mode,
        description=description,
        hidden=bool(fields.get("hidden", False)),
        permission=_rules(fields, where),
        steps=steps,
        temperature=float(temperature) if temperature is not None else None,
        prompt_text=prompt or None,
        model=_model(fields.get("model"), where),
        native=False,
    )


def _rules(fields: dict[str, Any], where: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    tools = fields.get("tools") or {}
    if not isinstance(tools, dict) or not all(isinstance(v, bool) for v in tools.values()):
        raise AgentConfigError(f"{where}: tools must map tool names to true or false")
    rules += [
        {"permission": str(tool), "pattern": "*", "action": "deny"} for tool, on in tools.items() if not on
    ]
    config = fields.get("permission")
    if config is None:
        return rules
    if not isinstance(config, dict | list):
        raise AgentConfigError(f"{where}: permission must be a mapping (edit: deny) or a list of rules")
    try:
        parsed = from_config(config)
    except (AttributeError, TypeError, ValueError):
        raise AgentConfigError(
            f"{where}: permission values must be allow, ask, deny or a mapping of them"
        ) from None
    for rule in parsed:
        if rule.get("action") not in ACTIONS or not all(
            isinstance(rule.get(k), str) and 0 < len(rule[k]) <= 500 for k in ("permission", "pattern")
        ):
            raise AgentConfigError(
                f"{where}: permission rule {rule!r} needs a permission, pattern and allow/ask/deny"
            )
    return rules + [{k: r[k] for k in ("permission", "pattern", "action")} for r in parsed]


def _model(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    provider, _, model = value.partition("/") if isinstance(value, str) else ("", "", "")
    if not provider or not model or len(value) > 200:
        raise AgentConfigError(f"{where}: model must be provider/model, e.g. anthropic/claude-sonnet-4")
    return {"providerID": provider, "modelID": model}


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
                agents[name] = agent_from_fields(name, meta, where, prompt=body)
        except AgentConfigError as exc:
            errors.append(str(exc))
    return agents, errors


def resolve_agent(name: str, workspace: tuple[dict[str, Agent], list[str]] | None) -> Agent:
    """The agent called `name`: built in, else the workspace's (`workspace`: read_workspace_agents).
    UnknownAgent says which agents there are or, for a file that did not parse, why."""
    if name in AGENTS:
        return AGENTS[name]
    found, errors = workspace or ({}, [])
    if name in found:
        return found[name]
    mine = [e for e in errors if PurePosixPath(e.split(":", 1)[0]).stem == name]
    if mine:
        raise UnknownAgent(f"agent {name!r} cannot be used: {mine[0]}")
    known = sorted({*(a.name for a in AGENTS.values() if not a.hidden), *found})
    raise UnknownAgent(f"no agent named {name!r}: one of {', '.join(known)}")
