"""grep: regex search of file contents (ripgrep in the sandbox), grouped by file, at most 100 matches."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import ask_external, description, resolve
from sandbox.protocol import FileNotFound, SandboxError

MAX_LINE = 2000
GREP_TRUNCATED_NOTE = "(Results truncated. Consider using a more specific path or pattern.)"


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
        # OpenCode 1.18.33's lines, as it prints them: the count (saying when there are more), then per
        # file its path and `  Line N: text`, a blank line between files, and the truncation note.
        lines = [f"Found {len(matches)} matches{' (more matches available)' if truncated else ''}"]
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
            lines += ["", GREP_TRUNCATED_NOTE]
        return ToolResult(
            title=args.pattern,
            output="\n".join(lines),
            metadata={"matches": len(matches), "truncated": truncated},
        )
