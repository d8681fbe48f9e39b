"""glob: files matching a pattern, newest first, at most 100."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import ask_external, description, relative, resolve
from hangar.engine.tools.ls import TRUNCATED_NOTE
from sandbox.protocol import FileNotFound, SandboxError


class GlobParams(BaseModel):
    pattern: str = Field(description="The glob pattern to match files against")
    path: str | None = Field(
        default=None,
        description="The directory to search in. If not specified, the workspace directory will be used. "
        'IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" or "null" - '
        "simply omit it for the default behavior. Must be a valid directory path if provided.",
    )


class GlobTool:
    name = "glob"
    description = description("glob")
    parameters = GlobParams

    def execute(self, args: GlobParams, ctx: ToolContext) -> ToolResult:
        path = resolve(args.path)
        ask_external(ctx, path, is_dir=True)
        ctx.ask("glob", [args.pattern], ["*"], {"pattern": args.pattern, "path": path})
        try:
            files, truncated = ctx.sandbox.glob(args.pattern, path)
        except FileNotFound:
            raise ToolError(f"Directory not found: {path}") from None
        except SandboxError as exc:
            raise ToolError(f"glob failed: {exc}") from None
        if not files:
            output = "No files found"
        else:
            output = "\n".join(files)
            if truncated:
                output += "\n\n" + TRUNCATED_NOTE
        return ToolResult(
            title=relative(path), output=output, metadata={"count": len(files), "truncated": truncated}
        )
