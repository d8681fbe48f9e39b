"""todowrite / todoread: the session's task list, replaced wholesale (seed 000 §16).

Both need the Session row in `ctx.extra["session"]` (the loop puts it there); the store service
`todos_replace` persists the list and publishes `todo.updated`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from hangar.engine.tools.base import EXTRA_SESSION, ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description

if TYPE_CHECKING:
    from hangar.conversations.models import Session


class TodoInfo(BaseModel):
    content: str = Field(description="Brief description of the task")
    status: Literal["pending", "in_progress", "completed", "cancelled"] = Field(
        description="Current status of the task: pending, in_progress, completed, cancelled",
    )
    priority: Literal["high", "medium", "low"] = Field(
        description="Priority level of the task: high, medium, low"
    )


class TodoWriteParams(BaseModel):
    todos: list[TodoInfo] = Field(description="The updated todo list")


class TodoReadParams(BaseModel):
    pass


def _session(ctx: ToolContext) -> Session:
    session: Session | None = ctx.extra.get(EXTRA_SESSION)
    if session is None:
        raise ToolError("todo tools need the session (ctx.extra['session'] is not set)")
    return session


def _result(todos: Sequence[Mapping[str, object]]) -> ToolResult:
    open_count = sum(1 for t in todos if t["status"] != "completed")
    return ToolResult(
        title=f"{open_count} todos", output=json.dumps(todos, indent=2), metadata={"todos": todos}
    )


class TodoWriteTool:
    name = "todowrite"
    description = description("todowrite")
    parameters = TodoWriteParams

    def execute(self, args: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        from hangar.conversations.services import todos_replace  # the store, imported at use

        session = _session(ctx)
        ctx.ask("todowrite", ["*"], ["*"], {})
        todos = [t.model_dump() for t in args.todos]
        todos_replace(session=session, todos=todos)
        return _result(todos)


class TodoReadTool:
    name = "todoread"
    description = description("todoread")
    parameters = TodoReadParams

    def execute(self, args: TodoReadParams, ctx: ToolContext) -> ToolResult:
        from hangar.conversations.loop_selectors import todos_of

        session = _session(ctx)
        ctx.ask("todoread", ["*"], ["*"], {})
        todos = todos_of(session.pk)
        return _result(todos)
