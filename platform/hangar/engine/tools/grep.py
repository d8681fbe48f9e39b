"""grep: regex search of file contents (ripgrep in the sandbox), grouped by file, at most 100 matches."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import ask_external, description, resolve
from hangar.engine.tools.ls import TRUNCATED_NOTE
from sandbox.protocol import FileNotFound, SandboxError

MAX_LINE = 2000


class GrepParams(BaseModel):
    pattern: str = Field(description="The regex pattern to search for in file contents")
    path: str | None = Field(
        default=None,
        description="The directory to search in. Defaults to the workspace directory.",
    )
    include: str | None = Field(
        default=None,
        description='File pattern to include in the search (e.g. "*.js", "*.{ts,tsx}")',
    )


class GrepTool:
    name = "grep"
    description = description("grep")
    parameters = GrepParams

    def execute(self, args: GrepParams, ctx: ToolContext) -> ToolResult:
        if not args.pattern:
            raise ToolError("pattern is required")
        path = resolve(args.path)
        ask_external(ctx, path, is_dir=True)
        ctx.ask(
            "grep", [args.pattern], ["*"], {"pattern": args.pattern, "path": path, "include": args.include}
        )
        try:
            matches, truncated = ctx.sandbox.grep(args.pattern, path, include=args.include or None)
        except FileNotFound:
            raise ToolError(f"Directory not found: {path}") from None
        except SandboxError as exc:
            raise ToolError(f"grep failed: {exc}") from None
        if not matches:
            return ToolResult(
                title=args.pattern, output="No files found", metadata={"matches": 0, "truncated": False}
            )
        lines = [f"Found {len(matches)} matches"]
        current = None
        for match in matches:
            if match.path != current:
                if current is not None:
                    lines.append("")
                current = match.path
                lines.append(f"{match.path}:")
            text = match.text if len(match.text) <= MAX_LINE else match.text[:MAX_LINE] + "..."
            lines.append(f"  Line {match.line}: {text}")
        if truncated:
            lines += ["", TRUNCATED_NOTE]
        return ToolResult(
            title=args.pattern,
            output="\n".join(lines),
            metadata={"matches": len(matches), "truncated": truncated},
        )
