"""write: create or overwrite a file. An existing file must have been read first this session."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools import diagnostics, formatting
from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import (
    ask_external,
    description,
    file_lock,
    filediff,
    relative,
    resolve,
    unified_diff,
)
from sandbox.protocol import FileNotFound


class WriteParams(BaseModel):
    content: str = Field(description="The content to write to the file")
    filePath: str = Field(
        description="The absolute path to the file to write (must be absolute, not relative)"
    )


def require_read(path: str, ctx: ToolContext, verb: str = "overwriting") -> None:
    if not ctx.was_read(path):
        raise ToolError(f"You must read file {path} before {verb} it. Use the Read tool first")


def read_text(path: str, ctx: ToolContext) -> str:
    try:
        return ctx.sandbox.read_bytes(path).decode("utf-8", "replace")
    except FileNotFound:
        return ""


class WriteTool:
    name = "write"
    description = description("write")
    parameters = WriteParams

    def execute(self, args: WriteParams, ctx: ToolContext) -> ToolResult:
        path = resolve(args.filePath)
        ask_external(ctx, path)
        with file_lock(ctx.session_id, path):
            return self._write(path, args, ctx)

    def _write(self, path: str, args: WriteParams, ctx: ToolContext) -> ToolResult:
        stat = ctx.sandbox.stat(path)
        if stat is not None and stat.type == "dir":
            raise ToolError(f"Path is a directory, not a file: {path}")
        exists = stat is not None
        if exists:
            require_read(path, ctx)
        before = read_text(path, ctx) if exists else ""
        diff = unified_diff(path, before, args.content)
        ctx.ask("edit", [relative(path)], ["*"], {"filepath": path, "diff": diff})
        ctx.sandbox.write(path, args.content)
        ctx.mark_read(path)
        formatted = formatting.format_file(ctx, path)
        after = read_text(path, ctx) if formatted else args.content
        if after != args.content:  # the diff shows what the file holds now, as OpenCode's does
            diff = unified_diff(path, before, after)
        found = diagnostics.collect(ctx, path)  # of the formatted text
        return ToolResult(
            title=relative(path),
            output="Wrote file successfully."
            + formatting.note(formatted, after != args.content)
            + diagnostics.with_other_files(found, path),
            metadata={
                "diagnostics": found,
                "filepath": path,
                "exists": exists,
                "diff": diff,
                "filediff": filediff(path, before, after, "modified" if exists else "added", diff),
                **({"formatter": formatted} if formatted else {}),
            },
        )
