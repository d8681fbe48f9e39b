"""Skills (seed 003 "Skills", seed 001): `.opencode/skills/<name>/SKILL.md` in the workspace, YAML
frontmatter (`name`, `description`) then instructions. The system prompt lists those the agent may load
(name, description, location); the `skill` tool loads one, permission-checked (`skill` permission, the
skill's name as pattern), and its output is never pruned."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from hangar.agent_config import AgentConfigError
from hangar.engine.agents.custom_agents import read_definition
from sandbox.protocol import FileNotFound, Sandbox, SandboxError

SKILLS_DIR = "/workspace/.opencode/skills"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_SKILLS = 50


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: str  # its SKILL.md


def read_skill(sandbox: Sandbox, name: str) -> tuple[Skill, str]:
    """The skill and its instructions (the body after the frontmatter). ValueError saying why not."""
    if not NAME.fullmatch(name):
        raise ValueError(f"not a skill name: {name[:80]!r}")
    path = f"{SKILLS_DIR}/{name}/SKILL.md"
    try:
        meta, body, _ = read_definition(sandbox, path)
    except AgentConfigError as exc:
        if isinstance(exc.__cause__, FileNotFound):
            raise exc.__cause__ from None  # the caller tells a missing skill apart
        raise ValueError(str(exc)) from None
    description = meta.get("description")
    description = description.strip()[:1000] if isinstance(description, str) else ""
    return Skill(name, description or f"Instructions in {path}", path), body


def read_skills(sandbox: Sandbox) -> list[Skill]:
    """The workspace's skills (a SKILL.md that cannot be read is left out). Globbing inside the skills
    folder: a workspace without one (the usual case) answers at once, without a walk of the workspace."""
    try:
        paths, _ = sandbox.glob("*/SKILL.md", SKILLS_DIR)
    except SandboxError:
        return []
    skills = []
    for path in sorted(paths)[:MAX_SKILLS]:
        try:
            skills.append(read_skill(sandbox, PurePosixPath(path).parent.name)[0])
        except (ValueError, SandboxError):
            continue
    return skills


def listing(skills: list[Skill]) -> str:
    """The system prompt's <available_skills> block (seed 003's format); "" when there are none."""
    if not skills:
        return ""
    items = "".join(
        f"<skill>\n<name>{s.name}</name>\n<description>{s.description}</description>\n"
        f"<location>file://{s.path}</location>\n</skill>\n"
        for s in skills
    )
    return f"<available_skills>\n{items}</available_skills>"
