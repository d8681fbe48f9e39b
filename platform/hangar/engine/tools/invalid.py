"""invalid: what the loop runs instead when the model names an unknown tool or sends bad
arguments, so the model sees why and can retry (seed 000 §12.3)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolResult
from hangar.engine.tools.common import description


class InvalidParams(BaseModel):
    tool: str = Field(description="The tool the model tried to call")
    error: str = Field(description="Why the call could not be run")


class InvalidTool:
    name = "invalid"
    description = description("invalid")
    parameters = InvalidParams

    def execute(self, args: InvalidParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(
            title="Invalid Tool",
            output=f"The arguments provided to the tool are invalid: {args.error}",
            metadata={"tool": args.tool},
        )
