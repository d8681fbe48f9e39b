"""The hidden title agent (seed 003 "Auto-Title Generation"): after the first reply, one non-streaming
call turns the first user message into a title of at most 50 characters."""

from __future__ import annotations

import time

from hangar.conversations.loop_selectors import StepReader, title_and_parent
from hangar.conversations.models import Session
from hangar.conversations.services import DEFAULT_TITLE_PREFIX
from hangar.conversations.session_services import provisional_title, session_title_generated
from hangar.engine.agents.builtin import agent_get
from hangar.engine.providers.base import Model, ProviderError, Usage
from hangar.engine.providers.cost import step_cost
from hangar.engine.session.system import prompt_text
from hangar.engine.turn.spend import model_call, prompt_tokens, quiet_check
from hangar.logging import get_logger
from hangar.usage.ledger_services import budget_hold_release, usage_record

log = get_logger(__name__)
MAX_CHARS = 50


def clean_title(text: str) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip("\"'`*# ").removeprefix("Title:").strip().rstrip(".!?,;:")
    return line[:MAX_CHARS].rstrip()


def title_maybe(
    session: Session, model: Model | None, reader: StepReader, steps: int, max_output: int = 0
) -> None:
    """After a run of `steps` steps with `model` (hangar.engine.run.loop.Loop): title the session from its
    first user message if it still has the default title. `max_output`: the most the model writes in one
    answer (the catalogue's), for the call's ceiling when a hard budget covers it. The messages and their parts are the run's own
    last read (`reader`); only the title is read again, in case a person renamed the session meanwhile."""
    if model is None:  # the turn never reached a model (e.g. no credential)
        return
    title, parent_id = title_and_parent(session.pk)
    if parent_id:
        return
    messages = reader.messages  # read before the run's last step, which may have been its first reply
    first = next((m for m in messages if m.role == "user"), None)
    if first is None or not (steps or any(m.role == "assistant" for m in messages)):
        return
    text = "\n".join(p["text"] for p in reader.parts_of(first) if p["type"] == "text")
    provisional = provisional_title(text)  # what the first prompt titled it with meanwhile
    if not (title.startswith(DEFAULT_TITLE_PREFIX) or (provisional and title == provisional)):
        return  # a person named it
    provider, model_id = model.provider_id, model.model_id
    system = [prompt_text("title")]
    request = [{"role": "user", "content": f"Generate a title for this conversation:\n{text[:4000]}"}]
    allowed, held = quiet_check(
        session, provider, model_id, prompt=prompt_tokens(system, request, []), max_output=max_output
    )
    if not allowed:
        return
    began, outcome = time.monotonic(), "error"
    try:
        answer = model.complete(system=system, temperature=agent_get("title").temperature, messages=request)
        outcome = "ok"
    except ProviderError:
        log.info("title_failed", session=session.pk, exc_info=True)
        return
    finally:
        # The call's usage as the provider reported it (a model that keeps none: zero).
        usage = getattr(model, "last_usage", None) or Usage()
        cost = step_cost(provider, model_id, usage) if outcome == "ok" else 0.0
        latency = int((time.monotonic() - began) * 1000)
        usage_record(
            model_call(
                session,
                kind="title",
                provider=provider,
                model=model_id,
                usage=usage,
                cost=cost,
                latency_ms=latency,
                outcome=outcome,
            ),
            settle_hold=held,
        )
        if held:  # the call is recorded: its hold goes (the run's own step holds are settled already)
            budget_hold_release(session.pk)
    title = clean_title(answer)
    if not title:
        return
    session_title_generated(session=session, title=title, provisional=provisional)
