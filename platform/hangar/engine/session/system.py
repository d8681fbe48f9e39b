"""The system prompt's pieces (seed 000 §9, seed 003 "Building the System Prompt"): the base prompt
(agent prompt, or the model family's), the instruction files, the environment facts, and the synthetic
reminders of a turn. hangar.engine.turn.system_context composes them into a context epoch's baseline and its
mid-conversation updates.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from sandbox.protocol import Sandbox, SandboxError, SandboxUnavailable

if TYPE_CHECKING:
    from hangar.conversations.models import Message

PROMPTS = Path(__file__).parent / "prompts"
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_NESTED_DIRS = 32  # directories whose instruction files are looked for, beyond the root


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


def instruction_paths(dirs: Iterable[str] = ()) -> list[str]:
    """The instruction files that may apply, workspace-relative, in the order they are sent: the
    workspace root's, then those of each directory the agent has read a file in and of its parents up to
    the root (seed 003 "Contextual Instructions"), nearest the root first, at most MAX_NESTED_DIRS."""
    nested: set[str] = set()
    for directory in dirs:
        parts = PurePosixPath(directory).parts
        nested.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    ordered = sorted(nested, key=lambda d: (d.count("/"), d))[:MAX_NESTED_DIRS]
    return [*INSTRUCTION_FILES, *(f"{d}/{name}" for d in ordered for name in INSTRUCTION_FILES)]


def read_instruction(sandbox: Sandbox, path: str) -> str | None:
    """A workspace-relative instruction file's text (None: there is none, or it is empty). Raises
    SandboxUnavailable when the sandbox cannot answer: the caller keeps what it last read."""
    try:
        text = sandbox.read(f"/workspace/{path}", limit=2000).content
    except SandboxUnavailable:
        raise
    except SandboxError:  # not there, a directory, unreadable: no instructions from it
        return None
    return text if text.strip() else None


def workspace_is_git(sandbox: Sandbox) -> bool:
    try:
        return sandbox.stat("/workspace/.git") is not None
    except SandboxError:
        return False


def base_prompt(*, agent_prompt: str | None, agent_prompt_text: str | None, model_id: str) -> str:
    """Part one of the system prompt: a custom agent's own prompt (as in OpenCode), else the agent's
    named prompt, else the model family's."""
    return agent_prompt_text or prompt_text(agent_prompt or family_prompt(model_id))


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
