"""skill: load one of the workspace's skills into the conversation (hangar.engine.skills), asked as the
`skill` permission with the skill's name as pattern."""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from hangar.engine.skills import read_skill
from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description
from sandbox.protocol import FileNotFound, SandboxError


class SkillParams(BaseModel):
    name: str = Field(max_length=64, description="The name of the skill, as listed in <available_skills>")


class SkillTool:
    name = "skill"
    description = description("skill")
    parameters = SkillParams

    def execute(self, args: SkillParams, ctx: ToolContext) -> ToolResult:
        ctx.ask("skill", [args.name], [args.name], {"name": args.name})
        try:
            skill, body = read_skill(ctx.sandbox, args.name)
        except FileNotFound:
            raise ToolError(f'Skill "{args.name}" not found: see <available_skills> for the names.') from None
        except (ValueError, SandboxError) as exc:
            raise ToolError(f'Skill "{args.name}" cannot be loaded: {exc}') from None
        base = PurePosixPath(skill.path).parent
        output = "\n".join(
            [
                f'<skill_content name="{skill.name}">',
                f"# Skill: {skill.name}",
                "",
                body.strip(),
                "",
                f"Base directory for this skill: file://{base}",
                "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.",
                "</skill_content>",
            ]
        )
        return ToolResult(
            title=f"Loaded skill: {skill.name}",
            output=output,
            metadata={"name": skill.name, "dir": str(base)},
        )
