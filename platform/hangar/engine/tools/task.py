"""task: delegate work to a subagent in a child session (seed 000 §2.4, §3.4; OpenCode's tool and shapes).

The first execution checks the `task` permission for the agent's name (the caller's rules gate which
subagents it may call), creates the child session ("<description> (@<agent>)", its own rules: no todo
tools, no tasks unless its agent allows) or takes the child named by `task_id`, stores the prompt there
and enqueues the child's run (hangar.engine.session.subtasks). Then it parks (ChildRunning): no worker waits for a
child. The child's run ending wakes the parent; the same call executes again, finds its child (the part's
`awaiting`), and returns `task_id: …` with the child's last text in <task_result>, or fails with the
child's error. Several task calls of one step all start before the step parks, so they run in parallel.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from hangar.engine.agents.builtin import AGENTS, Agent
from hangar.engine.agents.permissions import DENY, decide
from hangar.engine.tools.base import (
    EXTRA_AGENTS,
    EXTRA_AWAITING,
    EXTRA_BY_USER,
    EXTRA_SESSION,
    ChildRunning,
    ToolContext,
    ToolError,
    ToolResult,
)
from hangar.engine.tools.common import description

# OpenCode's line for a subagent that says nothing of itself.
NO_DESCRIPTION = "This subagent should only be called manually by the user."


def subagents(custom: Iterable[Agent] = ()) -> list[Agent]:
    """The agents a task may start: subagents, not hidden, built in or the workspace's (`custom`)."""
    return [a for a in (*AGENTS.values(), *custom) if a.mode != "primary" and not a.hidden]


def task_description(agents: list[Agent]) -> str:
    """The tool's description with `agents` as the subagents it offers (OpenCode lists only those the
    caller's rules do not deny)."""
    listed = "\n".join(f"- {a.name}: {a.description or NO_DESCRIPTION}" for a in agents)
    return description("task").replace("{agents}", listed)


def callable_subagents(
    ruleset: list[dict[str, Any]], org_policy: list[dict[str, Any]], custom: Iterable[Agent] = ()
) -> list[Agent]:
    """The subagents the caller's rules let it start (ask counts: the person is asked at the call)."""
    return [
        a
        for a in subagents(custom)
        if decide("task", [a.name], ruleset=ruleset, org_policy=org_policy) != DENY
    ]


class TaskParams(BaseModel):
    description: str = Field(max_length=200, description="A short (3-5 words) description of the task")
    prompt: str = Field(max_length=100_000, description="The task for the agent to perform")
    subagent_type: str = Field(
        max_length=64, description="The type of specialized agent to use for this task"
    )
    task_id: str | None = Field(
        default=None,
        max_length=64,
        description=(
            "This should only be set if you mean to resume a previous task (you can pass a prior task_id "
            "and the task will continue the same subagent session as before instead of creating a fresh one)"
        ),
    )
    command: str | None = Field(
        default=None, max_length=2_000, description="The command that triggered this task"
    )


def task_output(child_id: str, text: str) -> str:
    return "\n".join(
        [
            f"task_id: {child_id} (for resuming to continue this task if needed)",
            "",
            "<task_result>",
            text,
            "</task_result>",
        ]
    )


def failure_message(error: dict[str, Any]) -> str:
    if error.get("name") == "MessageAbortedError":
        return "The subagent was aborted before it finished."
    detail = (error.get("data") or {}).get("message") or error.get("name") or "unknown error"
    return f"The subagent failed: {detail}"


class TaskTool:
    name = "task"
    description = task_description(subagents())
    parameters = TaskParams

    def execute(self, args: TaskParams, ctx: ToolContext) -> ToolResult:
        from hangar.conversations.subtask_selectors import child_of

        session = ctx.extra.get(EXTRA_SESSION)
        if session is None:
            raise ToolError("the task tool starts a child session, so it runs only in a session")
        awaiting = ctx.extra.get(EXTRA_AWAITING)
        waited = child_of(session.pk, awaiting) if awaiting else None
        if waited is not None:
            return self.result(args, waited.pk, waited.model)
        return self.start(args, ctx, session)

    def start(self, args: TaskParams, ctx: ToolContext, session: Any) -> ToolResult:
        from hangar.conversations.subtask_selectors import child_of, message_model
        from hangar.engine.session.subtasks import child_create, child_prompt

        custom = ctx.extra.get(EXTRA_AGENTS) or {}
        agent = AGENTS.get(args.subagent_type) or custom.get(args.subagent_type)
        if agent is None or agent not in subagents(custom.values()):
            available = ", ".join(a.name for a in subagents(custom.values()))
            raise ToolError(
                f"Unknown agent type: {args.subagent_type} is not a valid agent type (available: {available})"
            )
        if not ctx.extra.get(EXTRA_BY_USER):  # a person who names the subagent needs no permission for it
            ctx.ask(
                "task",
                [agent.name],
                ["*"],
                {"description": args.description, "subagent_type": agent.name},
            )
        # The model of the step that called the task (a person's subtask may name its own), as OpenCode.
        model = message_model(ctx.message_id) or {
            "providerID": session.model["providerID"],
            "modelID": session.model["modelID"],
        }
        child = child_of(session.pk, args.task_id) if args.task_id else None
        if child is None:
            child = child_create(
                parent=session,
                title=f"{args.description} (@{agent.name})",
                agent=agent.name,
                agent_rules=agent.permission,
                model=model,
            )
        child_prompt(child=child, prompt=args.prompt, agent=agent.name, model=model)
        raise ChildRunning(child.pk, args.description, {"sessionId": child.pk, "model": model})

    def result(self, args: TaskParams, child_id: str, model: dict[str, Any]) -> ToolResult:
        from hangar.conversations.subtask_selectors import child_outcome

        metadata = {"sessionId": child_id, "model": model}
        outcome = child_outcome(child_id)
        if outcome.running:
            raise ChildRunning(child_id, args.description, metadata)
        if outcome.error:
            raise ToolError(failure_message(outcome.error))
        if not outcome.answered:
            raise ToolError("The subagent ended without an answer.")
        return ToolResult(
            title=args.description, output=task_output(child_id, outcome.text), metadata=metadata
        )
