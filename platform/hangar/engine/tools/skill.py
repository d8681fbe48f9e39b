"""skill: load one of the workspace's skills into the conversation (hangar.engine.agents.skills), asked as the
`skill` permission with the skill's name as pattern."""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from hangar.engine.agents.skills import NAME, read_skill, read_skills
from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description
from sandbox.protocol import FileNotFound, SandboxError

SAMPLED_FILES = 10


class SkillParams(BaseModel):
    name: str = Field(max_length=64, description="The name of the skill, as listed in <available_skills>")


class SkillTool:
    name = "skill"
    description = description("skill")
    parameters = SkillParams

    def execute(self, args: SkillParams, ctx: ToolContext) -> ToolResult:
        # OpenCode's order: an unknown name fails (listing what exists) before the permission is asked.
        try:
            skill, body = read_skill(ctx.sandbox, args.name)
        except FileNotFound:
            raise ToolError(_not_found(args.name, ctx)) from None
        except ValueError as exc:
            if not NAME.fullmatch(args.name):
                raise ToolError(_not_found(args.name, ctx)) from None
            raise ToolError(f'Skill "{args.name}" cannot be loaded: {exc}') from None
        except SandboxError as exc:
            raise ToolError(f'Skill "{args.name}" cannot be loaded: {exc}') from None
        ctx.ask("skill", [args.name], [args.name], {"name": args.name})
        base = PurePosixPath(skill.path).parent
        output = "\n".join(
            [
                f'<skill_content name="{skill.name}">',
                f"# Skill: {skill.name}",
                "",
                body.strip(),
                "",
                f"Base directory for this skill: {base}",  # a path, as OpenCode 1.18.33 prints it
                "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.",
                "Note: file list is sampled.",
                "",
                "<skill_files>",
                *(f"<file>{path}</file>" for path in _files(ctx, str(base))),
                "</skill_files>",
                "</skill_content>",
            ]
        )
        return ToolResult(
            title=f"Loaded skill: {skill.name}",
            output=output,
            metadata={"name": skill.name, "dir": str(base)},
        )


def _not_found(name: str, ctx: ToolContext) -> str:
    """OpenCode's Skill.NotFoundError text: every skill's name, sorted, or "none"."""
    names = sorted(skill.name for skill in read_skills(ctx.sandbox))
    return f'Skill "{name}" not found. Available skills: {", ".join(names) or "none"}'


def _files(ctx: ToolContext, base: str) -> list[str]:
    """A sample of the skill's own files (its SKILL.md aside), at most 10, as OpenCode lists them."""
    try:
        paths, _ = ctx.sandbox.glob("**/*", base)
    except SandboxError:
        return []
    return [path for path in paths if PurePosixPath(path).name != "SKILL.md"][:SAMPLED_FILES]
