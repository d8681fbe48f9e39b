"""edit: exact-or-fuzzy find and replace in one file (the nine replacers in `replacers.py`).

CRLF files stay CRLF: oldString/newString are converted to the file's line ending before matching.
An empty oldString creates (or replaces) the file with newString, as in OpenCode.
"""

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
from hangar.engine.tools.replacers import IDENTICAL, ReplaceError, replace_with
from hangar.engine.tools.write import read_text, require_read


class EditParams(BaseModel):
    filePath: str = Field(description="The absolute path to the file to modify")
    oldString: str = Field(description="The text to replace")
    newString: str = Field(description="The text to replace it with (must be different from oldString)")
    replaceAll: bool | None = Field(
        default=None, description="Replace all occurrences of oldString (default false)"
    )


def to_ending(text: str, ending: str) -> str:
    text = text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


class EditTool:
    name = "edit"
    description = description("edit")
    parameters = EditParams

    def execute(self, args: EditParams, ctx: ToolContext) -> ToolResult:
        if args.oldString == args.newString:
            raise ToolError(IDENTICAL)
        path = resolve(args.filePath)
        ask_external(ctx, path)
        with file_lock(ctx.session_id, path):
            return self._edit(path, args, ctx)

    def _edit(self, path: str, args: EditParams, ctx: ToolContext) -> ToolResult:
        stat = ctx.sandbox.stat(path)
        if stat is not None and stat.type == "dir":
            raise ToolError(f"Path is a directory, not a file: {path}")
        if args.oldString == "":
            if stat is not None:
                require_read(path, ctx, "editing")
            before, after, matched = (read_text(path, ctx) if stat else ""), args.newString, "create"
        else:
            if stat is None:
                raise ToolError(f"File {path} not found")
            require_read(path, ctx, "editing")
            before = read_text(path, ctx)
            ending = "\r\n" if "\r\n" in before else "\n"
            old, new = to_ending(args.oldString, ending), to_ending(args.newString, ending)
            try:
                after, matched = replace_with(before, old, new, bool(args.replaceAll))
            except ReplaceError as exc:
                raise ToolError(str(exc)) from None
        plain_before, plain_after = before.replace("\r\n", "\n"), after.replace("\r\n", "\n")
        diff = unified_diff(path, plain_before, plain_after)
        ctx.ask("edit", [relative(path)], ["*"], {"filepath": path, "diff": diff})
        ctx.sandbox.write(path, after)
        ctx.mark_read(path)
        formatted = formatting.format_file(ctx, path)
        written = after
        if formatted and (after := read_text(path, ctx)) != written:
            plain_after = after.replace("\r\n", "\n")
            diff = unified_diff(path, plain_before, plain_after)
        found = diagnostics.collect(ctx, path)  # of the formatted text
        return ToolResult(
            title=relative(path),
            output="Edit applied successfully."
            + formatting.note(formatted, after != written)
            + diagnostics.this_file(found, path),
            metadata={
                "diagnostics": found,
                "diff": diff,
                "replacer": matched,
                "filediff": filediff(path, plain_before, plain_after, "modified" if stat else "added", diff),
                **({"formatter": formatted} if formatted else {}),
            },
        )
