"""`execute_tool`: what the loop calls for every tool call (and batch for each sub-call).

It does what OpenCode's `Tool.define` wrapper does around `execute`: validate the arguments with
the tool's pydantic model (a readable ToolError on failure, so the model can fix the call),
run it under the CPU budget (`budget.py`: a deadline and the run's abort, for the work a tool does in
the worker), and bound the output (`truncate.py`) unless the tool bounded it itself, which it signals
by putting `truncated` in its metadata (read, list, glob, grep).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from hangar.engine.tools import budget
from hangar.engine.tools.base import Tool, ToolContext, ToolError, ToolResult
from hangar.engine.tools.truncate import truncate_output


def format_validation_error(tool: str, error: ValidationError) -> str:
    problems = "\n".join(
        f"  - {'.'.join(str(p) for p in issue['loc']) or 'root'}: {issue['msg']}" for issue in error.errors()
    )
    return (
        f"The {tool} tool was called with invalid arguments:\n{problems}\n"
        "Please rewrite the input so it satisfies the expected schema."
    )


def validate_args(tool: Tool, raw: Any) -> BaseModel:

    if not isinstance(raw, dict):
        raise ToolError(f"The {tool.name} tool was called with invalid arguments: expected a JSON object")
    try:
        return tool.parameters.model_validate(raw)
    except ValidationError as exc:
        raise ToolError(format_validation_error(tool.name, exc)) from None


def execute_tool(tool: Tool, raw_args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Validate, execute, truncate. Raises ToolError / PermissionAsked / PermissionRejected."""
    args = validate_args(tool, raw_args)
    try:
        with budget.within(budget.TOOL_CPU_S, ctx.abort):
            result = tool.execute(args, ctx)
    except budget.OutOfTime as exc:
        raise ToolError(f"The {tool.name} tool {exc}: the input is too large or too ambiguous.") from None
    except budget.Aborted:
        raise ToolError("Tool execution aborted") from None
    if "truncated" not in result.metadata:
        bounded = truncate_output(result.output, call_id=ctx.call_id, sandbox=ctx.sandbox)
        if bounded.truncated:
            result.output = bounded.content
            result.metadata["truncated"] = True
            result.metadata["outputPath"] = bounded.output_path
    return result
