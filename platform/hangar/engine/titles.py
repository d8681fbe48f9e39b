"""The hidden title agent (seed 003 "Auto-Title Generation"): after the first reply, one non-streaming
call turns the first user message into a title of at most 50 characters."""

from __future__ import annotations

from hangar.conversations.models import Message, Part, Session
from hangar.conversations.services import DEFAULT_TITLE_PREFIX
from hangar.conversations.session_services import session_title_generated
from hangar.engine.agents import agent_get
from hangar.engine.providers.base import ProviderError
from hangar.engine.system import prompt_text
from hangar.logging import get_logger

log = get_logger(__name__)
MAX_CHARS = 50


def clean_title(text: str) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip("\"'`*# ").removeprefix("Title:").strip().rstrip(".!?,;:")
    return line[:MAX_CHARS].rstrip()


def title_maybe(run) -> None:
    if run.model is None:  # the turn never reached a model (e.g. no credential)
        return
    session = Session.objects.get(pk=run.session_id)
    if not session.title.startswith(DEFAULT_TITLE_PREFIX) or session.parent_id:
        return
    first = Message.objects.filter(session_id=session.pk, role="user").order_by("id").first()
    if first is None or not Message.objects.filter(session_id=session.pk, role="assistant").exists():
        return
    text = "\n".join(p["text"] for p in Part.objects.filter(message=first, type="text").values_list("data", flat=True))
    try:
        answer = run.model.complete(system=[prompt_text("title")], temperature=agent_get("title").temperature,
                                    messages=[{"role": "user", "content": f"Generate a title for this conversation:\n{text[:4000]}"}])
    except ProviderError:
        log.info("title_failed", session=session.pk, exc_info=True)
        return
    title = clean_title(answer)
    if not title:
        return
    session_title_generated(session=session, title=title)
