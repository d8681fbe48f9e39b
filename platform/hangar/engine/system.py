"""The system prompt (seed 000 §9, seed 003 "Building the System Prompt").

Two parts, cache-friendly (§9.1): part one is the base prompt (agent prompt, or the model family's)
and never changes within a session, so providers can cache it; part two is everything that may
change: the environment block, AGENTS.md / CLAUDE.md instructions from the workspace, the skills
list, and the user message's own `system` text.
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.protocol import Sandbox, SandboxError

if TYPE_CHECKING:
    from hangar.conversations.models import Message

PROMPTS = Path(__file__).parent / "prompts"
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")


@lru_cache(maxsize=32)
def prompt_text(name: str) -> str:
    return (PROMPTS / f"{name}.txt").read_text()


def family_prompt(model_id: str) -> str:
    """Seed 000 §9.2, with our own texts: gpt / o-series, gemini, claude, else the default."""
    m = model_id.lower()
    if "gpt-" in m or m.startswith(("o1", "o3", "o4")):
        return "gpt"
    if "gemini-" in m:
        return "gemini"
    if "claude" in m:
        return "anthropic"
    return "default"


def read_instructions(sandbox: Sandbox) -> list[str]:
    out = []
    for name in INSTRUCTION_FILES:
        try:
            result = sandbox.read(f"/workspace/{name}", limit=2000)
        except SandboxError:
            continue
        if result.content.strip():
            out.append(f"Instructions from: /workspace/{name}\n{result.content}")
    return out


def workspace_is_git(sandbox: Sandbox) -> bool:
    try:
        return sandbox.stat("/workspace/.git") is not None
    except SandboxError:
        return False


def build_system(
    *,
    agent_prompt: str | None,
    agent_prompt_text: str | None = None,
    provider_id: str,
    model_id: str,
    instructions: list[str],
    skills: str,
    user_system: str | None = None,
    is_git: bool = False,
) -> list[str]:
    """`instructions` and `skills` as read from the workspace (read_instructions, skills.listing; the loop
    keeps them between steps: hangar.engine.session_sandbox). A custom agent's own prompt
    (`agent_prompt_text`) takes the base prompt's place, as in OpenCode."""
    base = agent_prompt_text or prompt_text(agent_prompt or family_prompt(model_id))
    env = prompt_text("environment").format(
        model_id=model_id,
        provider_id=provider_id,
        is_git="yes" if is_git else "no",
        today=time.strftime("%a %b %d %Y"),
    )
    dynamic = [env, *instructions, skills, user_system or ""]
    return [base, "\n\n".join(part for part in dynamic if part)]


def turn_reminders(agent: str, messages: list[Message], last_step: bool) -> list[dict[str, Any]]:
    """The synthetic user message appended to a step's history (OpenCode's insertReminders): the plan
    agent's rules, the switch back to build after planning, the last allowed step's warning."""
    out = []
    previous = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if agent == "plan":
        out.append(prompt_text("plan"))
    elif previous is not None and previous.data.get("agent") == "plan":
        out.append(prompt_text("build_switch"))
    if last_step:
        out.append(prompt_text("max_steps"))
    return [{"role": "user", "content": "\n".join(out)}] if out else []
