"""plan_exit / plan_enter: the agent proposes switching between the plan and build agents, and the
person decides (seed 000 §8.5). Each asks one question through the `question` machinery (the run waits
without a worker); "Yes" adds a synthetic user message for the other agent, which the loop's next step
picks up (the agent of a turn is its last user message's), "No" stops the turn as a rejection does."""

from __future__ import annotations

from pydantic import BaseModel

from hangar.engine.tools.base import EXTRA_SESSION, PermissionRejected, ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description
from hangar.engine.tools.question import ask_person
from sandbox.protocol import SandboxError

PLANS_DIR = "/workspace/.opencode/plans"


class NoParams(BaseModel):
    pass


def newest_plan(ctx: ToolContext) -> str | None:
    try:
        paths, _ = ctx.sandbox.glob("*.md", PLANS_DIR)
    except SandboxError:  # no plans folder yet: the texts go without a path
        return None
    return paths[0] if paths else None


def switch_agent(
    ctx: ToolContext, *, header: str, question: str, yes: str, no: str, agent: str, text: str
) -> None:
    """Ask; on "Yes" store the synthetic user message for `agent`, else stop the turn."""
    from hangar.conversations.loop_services import synthetic_user_message  # the store, at use

    options = [{"label": "Yes", "description": yes}, {"label": "No", "description": no}]
    answers = ask_person(ctx, [{"question": question, "header": header, "options": options}])
    if not answers or answers[0] != ["Yes"]:
        raise PermissionRejected(f"The user chose not to switch to the {agent} agent")
    session = ctx.extra.get(EXTRA_SESSION)
    if session is None:
        raise ToolError("this tool runs only in a session")
    synthetic_user_message(session=session, agent=agent, text=text)


class PlanExitTool:
    name = "plan_exit"
    description = description("plan_exit")
    parameters = NoParams

    def execute(self, args: NoParams, ctx: ToolContext) -> ToolResult:
        plan = newest_plan(ctx)
        where = f"at {plan} " if plan else ""
        switch_agent(
            ctx,
            header="Build Agent",
            question=f"The plan {where}is complete. Switch to the build agent and start implementing?",
            yes="Switch to the build agent and start implementing the plan",
            no="Stay with the plan agent to keep refining the plan",
            agent="build",
            text=f"The plan {where}has been approved, you can now edit files. Execute the plan",
        )
        return ToolResult(
            title="Switching to build agent",
            output="User approved switching to build agent. Wait for further instructions.",
            metadata={"plan": plan},
        )


class PlanEnterTool:
    name = "plan_enter"
    description = description("plan_enter")
    parameters = NoParams

    def execute(self, args: NoParams, ctx: ToolContext) -> ToolResult:
        switch_agent(
            ctx,
            header="Plan Mode",
            question="This task looks complex enough to plan first. Switch to the plan agent?",
            yes="Switch to the plan agent to explore and write a plan before changing code",
            no="Stay with the build agent and continue",
            agent="plan",
            text="User has requested to enter plan mode. Switch to plan mode and begin planning.",
        )
        return ToolResult(
            title="Switching to plan agent",
            output="User approved switching to plan agent. Wait for further instructions.",
            metadata={},
        )
