"""apply_patch: add, delete, update and move files with one patch (offered instead of edit/write
to models that prefer it; see `registry.prefers_apply_patch`). Every change is computed before
anything is written, so a hunk that does not fit leaves the workspace untouched."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

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
from hangar.engine.tools.patch import BEGIN, END, Hunk, PatchError, apply_chunks, parse_patch
from hangar.engine.tools.write import read_text
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

        paths = sorted(
            {resolve(h.path) for h in hunks} | {resolve(h.move_path) for h in hunks if h.move_path}
        )
        for path in paths:
            ask_external(ctx, path)
        with ExitStack() as held:
            for path in paths:  # sorted: two patches locking overlapping files cannot deadlock
                held.enter_context(file_lock(ctx.session_id, path))
            changes, diff = self._plan(hunks, ctx)
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
            formatted, now = self._format(changes, ctx)

        summary = "\n".join(f"{kind} {relative(target)}" for kind, _, target, _, _ in changes)
        statuses = {"A": "added", "D": "deleted", "M": "modified"}
        found: diagnostics.Diagnostics = {}
        for kind, _, target, _, _ in changes:
            if kind != "D":
                found |= diagnostics.collect(ctx, target)
        errors = "".join(diagnostics.this_file(found, t) for k, _, t, _, _ in changes if k != "D")
        notes = "".join(formatting.note(formatted[t], True).replace("The file", relative(t), 1) for t in now)
        return ToolResult(
            title=summary,
            output=f"Success. Updated the following files:\n{summary}{notes}{errors}",
            metadata={
                "diff": diff,
                "files": [filediff(t, b, now.get(t, a), statuses[k]) for k, _, t, b, a in changes],
                "diagnostics": found,
                **({"formatter": formatted} if formatted else {}),
            },
        )

    @staticmethod
    def _format(
        changes: list[tuple[str, str, str, str, str]], ctx: ToolContext
    ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """Run the formatters on each file the patch leaves in place (once, on its final text): what each
        formatter did per file, and the new text of the files it changed."""
        final: dict[str, str | None] = {}
        for kind, path, target, _, after in changes:
            if kind == "D" or target != path:
                final[path] = None
            if kind != "D":
                final[target] = after
        formatted: dict[str, dict[str, Any]] = {}
        now: dict[str, str] = {}
        for target, written in final.items():
            if written is None or not (outcome := formatting.format_file(ctx, target)):
                continue
            formatted[target] = outcome
            if outcome["ran"] and (text := read_text(target, ctx)) != written:
                now[target] = text
        return formatted, now

    @staticmethod
    def _plan(hunks: list[Hunk], ctx: ToolContext) -> tuple[list[tuple[str, str, str, str, str]], str]:
        """(kind, path, target, before, after) per hunk, computed up front so nothing is half-applied.
        A later hunk on a path sees the earlier hunks' result (`current`), not the file on disk."""
        current: dict[str, str | None] = {}  # path -> content as this patch leaves it (None: deleted)
        changes: list[tuple[str, str, str, str, str]] = []
        for hunk in hunks:
            path = resolve(hunk.path)
            if hunk.type == "add":
                after = (
                    hunk.contents
                    if hunk.contents.endswith("\n") or not hunk.contents
                    else hunk.contents + "\n"
                )
                changes.append(("A", path, path, "", after))
                current[path] = after
                continue
            verb = "delete" if hunk.type == "delete" else "update"
            try:
                before = (
                    current[path]
                    if path in current
                    else ctx.sandbox.read_bytes(path).decode("utf-8", "replace")
                )
            except FileNotFound:
                before = None
            if before is None:
                raise ToolError(f"apply_patch verification failed: Failed to read file to {verb}: {path}")
            if hunk.type == "delete":
                changes.append(("D", path, path, before, ""))
                current[path] = None
                continue
            try:
                after = apply_chunks(path, before, hunk.chunks)
            except PatchError as exc:
                raise ToolError(f"apply_patch verification failed: {exc}") from None
            target = resolve(hunk.move_path) if hunk.move_path else path
            changes.append(("M", path, target, before, after))
            if target != path:
                current[path] = None
            current[target] = after
        diff = "".join(unified_diff(target, before, after) for _, _, target, before, after in changes)
        return changes, diff
