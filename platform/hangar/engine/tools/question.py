"""question: ask the person questions and wait for the answers (OpenCode's tool and shapes).

Waiting never holds a worker: the first execution records a QuestionRequest (`question.asked`) and parks
the run as a permission ask does (PermissionAsked with the request's id); the answer or the rejection
re-enqueues the run, the same call executes again and finds the settled request by its call id. Answers
go back to the model; a rejection fails the call and stops the turn (as a rejected permission does).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hangar.engine.tools.base import (
    EXTRA_SESSION,
    PermissionAsked,
    QuestionDismissed,
    ToolContext,
    ToolError,
    ToolResult,
)
from hangar.engine.tools.common import description

REJECTED = "The user dismissed this question"


class QuestionOption(BaseModel):
    label: str = Field(max_length=200, description="Display text (1-5 words, concise)")
    description: str = Field(max_length=2_000, description="Explanation of choice")


class QuestionInfo(BaseModel):
    question: str = Field(max_length=4_000, description="Complete question")
    header: str = Field(max_length=30, description="Very short label (max 30 chars)")
    options: list[QuestionOption] = Field(max_length=20, description="Available choices")
    multiple: bool | None = Field(default=None, description="Allow selecting multiple choices")


class QuestionParams(BaseModel):
    questions: list[QuestionInfo] = Field(min_length=1, max_length=10, description="Questions to ask")


def answered_output(questions: list[dict[str, Any]], answers: list[list[str]]) -> str:
    pairs = ", ".join(
        f'"{q["question"]}"="{", ".join(a) or "Unanswered"}"'
        for q, a in zip(questions, answers, strict=False)
    )
    return f"User has answered your questions: {pairs}. You can now continue with the user's answers in mind."


def ask_person(ctx: ToolContext, questions: list[dict[str, Any]]) -> list[list[str]]:
    """The person's answers to `questions`, once given: the first call records the request and parks the
    run (PermissionAsked), a call after the reply returns the answers, or raises QuestionDismissed when
    the person dismissed them. Used by `question` and the plan tools."""
    from hangar.conversations.question_services import question_request_create  # the store, at use
    from hangar.conversations.selectors import question_for_call

    session = ctx.extra.get(EXTRA_SESSION)
    if session is None:
        raise ToolError("this tool asks the person, so it runs only in a session")
    request = question_for_call(session.pk, ctx.call_id)
    if request is None:
        request = question_request_create(
            session=session, questions=questions, message_id=ctx.message_id, call_id=ctx.call_id
        )
    if request.status == "pending":
        raise PermissionAsked(request.pk)
    if request.status == "rejected":
        raise QuestionDismissed(REJECTED)
    return request.answers or []


class QuestionTool:
    name = "question"
    description = description("question")
    parameters = QuestionParams

    def execute(self, args: QuestionParams, ctx: ToolContext) -> ToolResult:
        questions = [q.model_dump(exclude_none=True) for q in args.questions]
        answers = ask_person(ctx, questions)
        count = len(questions)
        return ToolResult(
            title=f"Asked {count} question{'s' if count != 1 else ''}",
            output=answered_output(questions, answers),
            metadata={"answers": answers},
        )
