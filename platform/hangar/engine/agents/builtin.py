"""Built-in agents (seed 000 §2.2, seed 003 "Agent Definitions"): named configurations the loop
interprets. Primary: build (default), plan (read-only except `.opencode/plans/*.md`). Subagents:
general, explore. Hidden: title, compaction, summary (no tools)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hangar.engine.agents.permissions import ALLOW, DENY


@dataclass(frozen=True)
class Agent:
    name: str
    mode: str  # primary | subagent
    description: str = ""
    hidden: bool = False
    permission: list[dict[str, Any]] = field(default_factory=list)
    steps: int | None = None  # max agentic steps (None: unlimited)
    temperature: float | None = None
    prompt: str | None = None  # prompt file name in engine/prompts (None: by model family)
    prompt_text: str | None = None  # a custom agent's own prompt (hangar.engine.agents.custom_agents)
    model: dict[str, str] | None = None  # a custom agent's model, when the prompt names none
    native: bool = True  # built in (False: defined by the team)


def _deny_all() -> list[dict[str, Any]]:
    return [{"permission": "*", "pattern": "*", "action": DENY}]


AGENTS: dict[str, Agent] = {
    "build": Agent(
        "build",
        "primary",
        "The default agent: full tool access.",
        permission=[
            {"permission": "question", "pattern": "*", "action": ALLOW},
            {"permission": "plan_enter", "pattern": "*", "action": ALLOW},
        ],
    ),
    "plan": Agent(
        "plan",
        "primary",
        "Plans without changing code: read-only except plan files.",
        permission=[
            {"permission": "question", "pattern": "*", "action": ALLOW},
            {"permission": "plan_exit", "pattern": "*", "action": ALLOW},
            {"permission": "edit", "pattern": "*", "action": DENY},
            {"permission": "edit", "pattern": ".opencode/plans/*.md", "action": ALLOW},
            {"permission": "edit", "pattern": "/workspace/.opencode/plans/*.md", "action": ALLOW},
        ],
    ),
    "general": Agent(
        "general",
        "subagent",
        "General-purpose agent for researching complex questions and executing multi-step tasks. Use this "
        "agent to execute multiple units of work in parallel.",
        permission=[
            {"permission": "todowrite", "pattern": "*", "action": DENY},
            {"permission": "todoread", "pattern": "*", "action": DENY},
        ],
    ),
    "explore": Agent(
        "explore",
        "subagent",
        "Fast agent specialized for exploring codebases. Use this when you need to quickly find files by "
        'patterns (eg. "src/components/**/*.tsx"), search code for keywords (eg. "API endpoints"), or answer '
        'questions about the codebase (eg. "how do API endpoints work?"). When calling this agent, specify '
        'the desired thoroughness level: "quick" for basic searches, "medium" for moderate exploration, or '
        '"very thorough" for comprehensive analysis across multiple locations and naming conventions.',
        permission=[
            {"permission": "*", "pattern": "*", "action": DENY},
            *[
                {"permission": p, "pattern": "*", "action": ALLOW}
                for p in ("grep", "glob", "list", "bash", "read", "webfetch", "websearch", "codesearch")
            ],
        ],
        prompt="explore",
    ),
    "title": Agent("title", "primary", hidden=True, permission=_deny_all(), temperature=0.5, prompt="title"),
    "compaction": Agent("compaction", "primary", hidden=True, permission=_deny_all(), prompt="compaction"),
    "summary": Agent("summary", "primary", hidden=True, permission=_deny_all(), prompt="summary"),
}


def agent_get(name: str | None) -> Agent:
    return AGENTS.get(name or "build") or AGENTS["build"]


def agent_list(include_hidden: bool = False) -> list[Agent]:
    return [a for a in AGENTS.values() if include_hidden or not a.hidden]


def agent_info(agent: Agent) -> dict[str, Any]:
    """OpenCode's Agent JSON shape (GET /agent)."""
    info = {
        "name": agent.name,
        "mode": agent.mode,
        "native": agent.native,
        "hidden": agent.hidden,
        # OpenCode's rule shape: the `narrow` mark of a workspace agent's rules is the engine's own.
        "permission": [{k: r[k] for k in ("permission", "pattern", "action")} for r in agent.permission],
        "options": {},
    }
    if agent.description:
        info["description"] = agent.description
    if agent.steps:
        info["steps"] = agent.steps
    if agent.temperature is not None:
        info["temperature"] = agent.temperature
    if agent.prompt_text:
        info["prompt"] = agent.prompt_text
    if agent.model:
        info["model"] = agent.model
    return info
