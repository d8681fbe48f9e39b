"""read: a window of a text file, line-numbered, in OpenCode's `<path>/<type>/<content>` format.

The sandbox applies OpenCode's limits (2000 lines by default, lines cut at 2000 chars, 50 KB per
window, binary detection); this tool checks permission, numbers the lines and words the footer.
Images and PDFs come back as attachments, as in OpenCode, up to MAX_ATTACHMENT_BYTES: a larger one is
refused before a byte of it leaves the sandbox (providers refuse images over 5 MB anyway, and the whole
file would sit in the worker's memory, then in the message row).
"""

from __future__ import annotations

import base64
import mimetypes

from pydantic import BaseModel, Field

from hangar.engine.tools import diagnostics
from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import ask_external, description, relative, resolve
from sandbox.protocol import FileNotFound, SandboxError

DEFAULT_LIMIT = 2000
ATTACHABLE = {"application/pdf"}
MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024


class ReadParams(BaseModel):
    filePath: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(default=None, description="The line number to start reading from (1-indexed)")
    limit: int | None = Field(
        default=None, description="The maximum number of lines to read (defaults to 2000)"
    )


class ReadTool:
    name = "read"
    description = description("read")
    parameters = ReadParams

    def execute(self, args: ReadParams, ctx: ToolContext) -> ToolResult:
        if args.offset is not None and args.offset < 1:
            raise ToolError("offset must be greater than or equal to 1")
        if args.limit is not None and args.limit < 1:
            raise ToolError("limit must be greater than or equal to 1")
        path = resolve(args.filePath)
        ask_external(ctx, path)
        ctx.ask("read", [path], ["*"], {})
        stat = ctx.sandbox.stat(path)
        if stat is None:
            raise ToolError(f"File not found: {path}")
        if stat.type == "dir":
            raise ToolError(f"Path is a directory, not a file: {path}. Use the list tool to see its entries.")
        mime = mimetypes.guess_type(path)[0] or ""
        if (mime.startswith("image/") and mime != "image/svg+xml") or mime in ATTACHABLE:
            return self._attachment(path, mime, stat.size, ctx)
        offset = args.offset or 1
        limit = args.limit or DEFAULT_LIMIT
        try:
            window = ctx.sandbox.read(path, offset=offset - 1, limit=limit)
        except FileNotFound:
            raise ToolError(f"File not found: {path}") from None
        if window.binary:
            raise ToolError(f"Cannot read binary file: {path}")
        if window.total_lines < offset and not (window.total_lines == 0 and offset == 1):
            raise ToolError(f"Offset {offset} is out of range for this file ({window.total_lines} lines)")
        lines = window.content.split("\n") if window.content or window.total_lines else []
        body = "\n".join(f"{offset + i}: {line}" for i, line in enumerate(lines))
        last = offset + len(lines) - 1
        if window.truncated and len(lines) < limit:
            footer = (
                f"(Output capped at 50 KB. Showing lines {offset}-{last}. Use offset={last + 1} to continue.)"
            )
        elif window.truncated:
            footer = (
                f"(Showing lines {offset}-{last} of {window.total_lines}. Use offset={last + 1} to continue.)"
            )
        else:
            footer = f"(End of file - total {window.total_lines} lines)"
        output = f"<path>{path}</path>\n<type>file</type>\n<content>\n{body}\n\n{footer}\n</content>"
        ctx.mark_read(path)
        diagnostics.warm(ctx, path)
        return ToolResult(
            title=relative(path),
            output=output,
            metadata={"preview": "\n".join(lines[:20]), "truncated": window.truncated},
        )

    def _attachment(self, path: str, mime: str, size: int, ctx: ToolContext) -> ToolResult:
        kind = "PDF" if mime == "application/pdf" else "Image"
        too_large = f"{kind} is too large to read: {size / 1e6:.1f} MB (the limit is 5 MB): {path}"
        if size > MAX_ATTACHMENT_BYTES:
            raise ToolError(too_large)
        try:  # the size is checked again in the sandbox: the file may have grown since the stat
            data = base64.b64encode(ctx.sandbox.read_bytes(path, max_bytes=MAX_ATTACHMENT_BYTES)).decode()
        except SandboxError as exc:
            if "too large" in str(exc):
                raise ToolError(too_large) from None
            raise
        message = f"{kind} read successfully"
        ctx.mark_read(path)
        return ToolResult(
            title=relative(path),
            output=message,
            metadata={"preview": message, "truncated": False},
            attachments=[{"type": "file", "mime": mime, "url": f"data:{mime};base64,{data}"}],
        )
