"""batch: up to 25 tool calls at once, in parallel threads (seed 000 §6.4).

Each sub-call goes through `ctx.extra["run_subcall"]` (the loop's SubcallRunner: own tool part,
own permission check). Without a runner (unit tests, scripts) sub-calls run directly through
`execute_tool` with a child context and no parts. Batch cannot contain batch.
"""

from __future__ import annotations

import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field

from hangar.engine.tools.base import (
    EXTRA_IN_BATCH,
    EXTRA_RUN_SUBCALL,
    EXTRA_TOOLS,
    PermissionAsked,
    PermissionRejected,
    SubcallRunner,
    ToolContext,
    ToolError,
    ToolResult,
)
from hangar.engine.tools.common import description
from hangar.engine.tools.execute import execute_tool

MAX_CALLS = 25
# A task parks the step until its child session ends; several task calls in one step already run in
# parallel, so batch has nothing to add to them.
DISALLOWED = {"batch", "task"}
NOT_SUGGESTED = {"invalid", "patch", "apply_patch", *DISALLOWED}


class BatchCall(BaseModel):
    tool: str = Field(description="The name of the tool to execute")
    parameters: dict[str, Any] = Field(description="Parameters for the tool")


class BatchParams(BaseModel):
    tool_calls: list[BatchCall] = Field(
        min_length=1, description="Array of tool calls to execute in parallel"
    )


def _direct_runner(ctx: ToolContext) -> SubcallRunner:
    """Fallback when the loop gives no runner: run the tool with a child context, no parts."""
    tools = ctx.extra.get(EXTRA_TOOLS) or {}

    def run(tool: str, parameters: dict[str, Any], *, index: int) -> ToolResult:
        child = replace(
            ctx,
            call_id=f"{ctx.call_id}-{index}",
            update_metadata=lambda _m: None,
            extra={**ctx.extra, EXTRA_IN_BATCH: True},
        )
        return execute_tool(tools[tool], parameters, child)

    return run


def _close_db_connection() -> None:
    """Sub-calls may touch the database from this pool thread; do not leak its connection."""
    try:
        from django.db import connection
    except ImportError:  # pragma: no cover - the tools are also usable without Django
        return
    connection.close()


class BatchTool:
    name = "batch"
    description = description("batch")
    parameters = BatchParams

    def execute(self, args: BatchParams, ctx: ToolContext) -> ToolResult:
        if ctx.extra.get(EXTRA_IN_BATCH):
            raise ToolError("Tool 'batch' is not allowed in batch. Disallowed tools: batch")
        tools = ctx.extra.get(EXTRA_TOOLS) or {}
        run = ctx.extra.get(EXTRA_RUN_SUBCALL) or _direct_runner(ctx)
        calls = args.tool_calls[:MAX_CALLS]
        suggestions = ", ".join(name for name in tools if name not in NOT_SUGGESTED)

        def one(index: int, call: BatchCall) -> tuple[bool, Any]:
            try:
                if call.tool in DISALLOWED:
                    raise ToolError(
                        f"Tool '{call.tool}' is not allowed in batch. "
                        f"Disallowed tools: {', '.join(sorted(DISALLOWED))}"
                    )
                if call.tool not in tools:
                    raise ToolError(
                        f"Tool '{call.tool}' not in registry. External tools (MCP, environment) cannot "
                        f"be batched - call them directly. Available tools: {suggestions}"
                    )
                return True, run(call.tool, call.parameters, index=index)
            except PermissionAsked as exc:
                return False, exc
            except PermissionRejected as exc:
                return False, ToolError(exc.feedback or str(exc))
            except ToolError as exc:
                return False, exc
            except Exception as exc:  # a sub-call's crash is that sub-call's failure, not the batch's
                return False, ToolError(f"{type(exc).__name__}: {exc}")
            finally:
                if threading.current_thread() is not threading.main_thread():
                    _close_db_connection()

        with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix=f"batch-{ctx.call_id}") as pool:
            # Each sub-call runs in a copy of this thread's context: the run's write fence goes with it.
            contexts = [contextvars.copy_context() for _ in calls]
            outcomes = list(pool.map(lambda ctx, item: ctx.run(one, *item), contexts, enumerate(calls)))
        asked = next((o for ok, o in outcomes if isinstance(o, PermissionAsked)), None)
        if asked is not None:
            raise asked  # the loop parks the run; finished sub-calls are kept by their runner
        outcomes += [
            (False, ToolError("Maximum of 25 tools allowed in batch")) for _ in args.tool_calls[MAX_CALLS:]
        ]

        ok = sum(1 for success, _ in outcomes if success)
        failed = len(outcomes) - ok
        if failed:
            output = f"Executed {ok}/{len(outcomes)} tools successfully. {failed} failed."
        else:
            output = f"All {ok} tools executed successfully.\n\nKeep using the batch tool for optimal performance in your next response!"
        names = [c.tool for c in args.tool_calls]
        details = [
            {"tool": names[i], "success": success, **({} if success else {"error": str(o)})}
            for i, (success, o) in enumerate(outcomes)
        ]
        return ToolResult(
            title=f"Batch execution ({ok}/{len(outcomes)} successful)",
            output=output,
            metadata={
                "totalCalls": len(outcomes),
                "successful": ok,
                "failed": failed,
                "tools": names,
                "details": details,
            },
            attachments=[a for success, o in outcomes if success for a in o.attachments],
        )
