"""A subtask step (OpenCode's pending subtask): a person asked for a subagent by name in their prompt
(`@agent ...`, a command with `subtask: true`), so the step answering that prompt makes no model call: its
one tool call is the `task` the person asked for, closed like any step (hangar.engine.turn.step_writer)."""

from __future__ import annotations

import json
from typing import Any

from hangar.conversations.loop_selectors import StepReader, StepState
from hangar.conversations.models import Message
from hangar.engine.turn.session_sandbox import SessionSandbox
from hangar.engine.turn.step_plan import StepPlan
from hangar.engine.turn.step_writer import StepWriter


def subtask_of(reader: StepReader, state: StepState, user: Message) -> dict[str, Any] | None:
    """The latest prompt's subtask part (a person asked for a subagent by name), if it has one."""
    if not any(m.role == "user" and m.pk == user.pk for m in state.messages[-2:]):
        return None  # only the prompt or the step answering it can be the subtask's
    return next((p for p in reader.parts_of(user) if p["type"] == "subtask"), None)


def run_subtask(
    writer: StepWriter, sandbox: SessionSandbox, plan: StepPlan, user: Message, subtask: dict[str, Any]
) -> None:
    """OpenCode's pending subtask: a step that makes no model call, its one tool call the `task` the
    person asked for (their choice of agent: no `task` permission asked), closed like any step."""
    start = sandbox.step_start()
    model = subtask.get("model") or plan.model_ref
    arguments = {k: subtask[k] for k in ("prompt", "description", "command") if subtask.get(k)}
    arguments["subagent_type"] = subtask["agent"]
    call: dict[str, Any] = {
        "type": "tool",
        "callID": f"subtask_{user.pk}",
        "tool": "task",
        "state": {"status": "pending", "input": arguments, "raw": json.dumps(arguments)},
    }
    parts: list[dict[str, Any]] = [{"type": "step-start", **({"snapshot": start} if start else {})}, call]
    message = writer.open(
        user,
        plan,
        parts,
        agent=subtask["agent"],
        modelID=model["modelID"],
        providerID=model["providerID"],
        finish="tool-calls",
    )
    writer.close(message, plan, model_call=False)
