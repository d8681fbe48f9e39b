"""lsp: one query to the workspace's language server (OpenCode's experimental `lsp` tool: the same
operations, 1-based positions, JSON results). Offered only where the operator turns it on
(HANGAR_LSP_TOOL=1), as OpenCode offers it only behind OPENCODE_EXPERIMENTAL_LSP_TOOL."""

from __future__ import annotations

import json
from typing import Literal

from django.conf import settings
from pydantic import BaseModel, Field

from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import ask_external, description, relative, resolve
from sandbox.protocol import SandboxError

QUERY = {
    "goToDefinition": "definition",
    "findReferences": "references",
    "goToImplementation": "implementation",
    "hover": "hover",
    "documentSymbol": "documentSymbol",
    "workspaceSymbol": "workspaceSymbol",
}
MAX_OUTPUT = 50_000


def offered() -> bool:
    return bool(settings.HANGAR_LSP_TOOL)


class LspParams(BaseModel):
    operation: Literal[
        "goToDefinition", "findReferences", "goToImplementation", "hover", "documentSymbol", "workspaceSymbol"
    ] = Field(description="The LSP operation to perform")
    filePath: str = Field(description="The absolute or relative path to the file")
    line: int = Field(ge=1, le=10_000_000, description="The line number (1-based, as shown in editors)")
    character: int = Field(
        ge=1, le=100_000, description="The character offset (1-based, as shown in editors)"
    )


class LspTool:
    name = "lsp"
    description = description("lsp")
    parameters = LspParams

    def execute(self, args: LspParams, ctx: ToolContext) -> ToolResult:
        path = resolve(args.filePath)
        ask_external(ctx, path)
        title = f"{args.operation} {relative(path)}:{args.line}:{args.character}"
        ctx.ask("lsp", ["*"], ["*"], {})
        if ctx.sandbox.stat(path) is None:
            raise ToolError(f"File not found: {path}")
        text = ""
        if args.operation == "workspaceSymbol":
            text = _identifier_at(ctx, path, args.line - 1, args.character - 1)
        try:
            result = ctx.sandbox.lsp_query(
                QUERY[args.operation], path, line=args.line - 1, character=args.character - 1, text=text
            )
        except SandboxError as exc:
            raise ToolError(f"lsp failed: {exc}") from None
        if not result:
            return ToolResult(
                title=title, output=f"No results found for {args.operation}", metadata={"result": []}
            )
        output = json.dumps(result, indent=2)
        if len(output) > MAX_OUTPUT:
            output = output[:MAX_OUTPUT] + "\n... (truncated)"
        return ToolResult(
            title=title, output=output, metadata={"result": result if len(output) < MAX_OUTPUT else []}
        )


def _identifier_at(ctx: ToolContext, path: str, line: int, character: int) -> str:
    text = ctx.sandbox.read(path, offset=line, limit=1).content
    start = end = min(character, len(text))
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end]
