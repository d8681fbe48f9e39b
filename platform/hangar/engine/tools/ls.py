"""list: a directory tree (up to 100 files, common build/cache directories skipped), drawn as
OpenCode's ls tool draws it: the root path, then two-space indentation per level, dirs with '/'."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import ask_external, description, relative, resolve
from sandbox.protocol import FileNotFound

TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"


class ListParams(BaseModel):
    path: str | None = Field(
        default=None,
        description="The absolute path to the directory to list (must be absolute, not relative)",
    )
    ignore: list[str] | None = Field(default=None, description="List of glob patterns to ignore")


def render_tree(root: str, paths: list[str]) -> str:
    """`paths` are relative to root; directories end with '/'."""
    children: dict[str, set[str]] = {"": set()}
    for raw in paths:
        parts = [p for p in raw.strip("/").split("/") if p]
        for depth in range(len(parts)):
            parent = "/".join(parts[:depth])
            is_dir = depth < len(parts) - 1 or raw.endswith("/")
            children.setdefault(parent, set()).add(parts[depth] + ("/" if is_dir else ""))
            if is_dir:
                children.setdefault("/".join(parts[: depth + 1]), set())
    lines = [root.rstrip("/") + "/"]

    def walk(parent: str, depth: int) -> None:
        entries = children.get(parent, set())
        for name in sorted(e for e in entries if e.endswith("/")):
            lines.append("  " * depth + name)
            walk(f"{parent}/{name[:-1]}" if parent else name[:-1], depth + 1)
        for name in sorted(e for e in entries if not e.endswith("/")):
            lines.append("  " * depth + name)

    walk("", 1)
    return "\n".join(lines) + "\n"


class ListTool:
    name = "list"
    description = description("list")
    parameters = ListParams

    def execute(self, args: ListParams, ctx: ToolContext) -> ToolResult:
        path = resolve(args.path)
        ask_external(ctx, path, is_dir=True)
        ctx.ask("list", [path], ["*"], {"path": path})
        try:
            paths, truncated = ctx.sandbox.list(path, ignore=args.ignore or [])
        except FileNotFound:
            raise ToolError(f"Directory not found: {path}") from None
        output = render_tree(path, paths)
        if truncated:
            output += "\n" + TRUNCATED_NOTE
        files = sum(1 for p in paths if not p.endswith("/"))
        return ToolResult(
            title=relative(path), output=output, metadata={"count": files, "truncated": truncated}
        )
