"""apply_patch: add, delete, update and move files with one patch (offered instead of edit/write
to models that prefer it; see `registry.prefers_apply_patch`). Every change is computed before
anything is written, so a hunk that does not fit leaves the workspace untouched."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description, filediff, relative, resolve, unified_diff
from hangar.engine.tools.patch import BEGIN, END, PatchError, apply_chunks, parse_patch
from sandbox.protocol import FileNotFound


class ApplyPatchParams(BaseModel):
    patchText: str = Field(description="The full patch text that describes all changes to be made")


class ApplyPatchTool:
    name = "apply_patch"
    description = description("apply_patch")
    parameters = ApplyPatchParams

    def execute(self, args: ApplyPatchParams, ctx: ToolContext) -> ToolResult:
        if not args.patchText:
            raise ToolError("patchText is required")
        try:
            hunks = parse_patch(args.patchText)
        except PatchError as exc:
            raise ToolError(f"apply_patch verification failed: {exc}") from None
        if not hunks:
            normal = args.patchText.replace("\r\n", "\n").strip()
            if normal == f"{BEGIN}\n{END}":
                raise ToolError("patch rejected: empty patch")
            raise ToolError("apply_patch verification failed: no hunks found")

        # (kind, path, target, before, after): computed up front so nothing is half-applied.
        changes: list[tuple[str, str, str, str, str]] = []
        for hunk in hunks:
            path = resolve(hunk.path)
            if hunk.type == "add":
                after = hunk.contents if hunk.contents.endswith("\n") or not hunk.contents else hunk.contents + "\n"
                changes.append(("A", path, path, "", after))
                continue
            try:
                before = ctx.sandbox.read_bytes(path).decode("utf-8", "replace")
            except FileNotFound:
                verb = "delete" if hunk.type == "delete" else "update"
                raise ToolError(f"apply_patch verification failed: Failed to read file to {verb}: {path}") from None
            if hunk.type == "delete":
                changes.append(("D", path, path, before, ""))
                continue
            try:
                after = apply_chunks(path, before, hunk.chunks)
            except PatchError as exc:
                raise ToolError(f"apply_patch verification failed: {exc}") from None
            target = resolve(hunk.move_path) if hunk.move_path else path
            changes.append(("M", path, target, before, after))

        diff = "".join(unified_diff(target, before, after) for _, _, target, before, after in changes)
        files = list(dict.fromkeys(relative(target) for _, _, target, _, _ in changes))
        ctx.ask("edit", files, ["*"], {"filepath": ", ".join(files), "diff": diff})

        for kind, path, target, _, after in changes:
            if kind == "D":
                ctx.sandbox.remove(path)
                continue
            ctx.sandbox.write(target, after)
            if target != path:
                ctx.sandbox.remove(path)
            ctx.mark_read(target)

        summary = "\n".join(f"{kind} {relative(target)}" for kind, _, target, _, _ in changes)
        statuses = {"A": "added", "D": "deleted", "M": "modified"}
        return ToolResult(
            title=summary,
            output=f"Success. Updated the following files:\n{summary}",
            metadata={"diff": diff, "files": [filediff(t, b, a, statuses[k]) for k, _, t, b, a in changes]},
        )
