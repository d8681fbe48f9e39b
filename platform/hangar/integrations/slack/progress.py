"""What a Slack thread shows of its session's run: ONE status message per run, edited in place
(chat.update) at most once per THROTTLE_S (current tool, todos, cost, a link to the web app); a summary
that mentions the requester when the run ends; permission requests and the agent's questions as buttons.

`on_events` is the store's event sink: it runs in the agent step, so for sessions that are not Slack
threads it costs a look at the session row the step already holds (`source`), and for Slack threads a
Redis SETNX that lets through one status task per window; the Slack calls happen in Celery tasks
(tasks.py)."""

from functools import partial

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from hangar.conversations.models import Event, Message, Part, Session, Todo
from hangar.integrations.slack.models import SlackThread

THROTTLE_S = 2  # seconds (whole: a Redis expiry); Slack allows about one chat.update per second per channel


def _progress(event: Event) -> bool:
    if event.type == "todo.updated":
        return True
    return event.type == "message.part.updated" and (event.payload.get("part") or {}).get("type") == "tool"


def on_events(session: Session, events: list[Event]) -> None:
    kinds = [
        e for e in events if e.type in ("session.idle", "permission.asked", "question.asked") or _progress(e)
    ]
    if not kinds or session.source != "slack":
        return
    from hangar.integrations.slack import tasks

    for event in kinds:
        if event.type == "session.idle":
            transaction.on_commit(lambda: tasks.slack_finish.delay(session.pk), robust=True)
        elif event.type == "permission.asked":
            request_id = event.payload["id"]
            transaction.on_commit(partial(tasks.slack_permission.delay, request_id), robust=True)
        elif event.type == "question.asked":
            request_id = event.payload["id"]
            transaction.on_commit(partial(tasks.slack_question.delay, request_id), robust=True)
        elif cache.add(f"slack:status:{session.pk}", 1, timeout=THROTTLE_S):
            transaction.on_commit(
                lambda: tasks.slack_status.apply_async(args=[session.pk], countdown=THROTTLE_S), robust=True
            )


def escape(text: str) -> str:
    """Text from the model (or a workspace) as Slack shows it literally: Slack's three control characters
    escaped (https://api.slack.com/reference/surfaces/formatting#escaping), so `<!channel>`, `<@U…>` and
    `<url|label>` in an answer are not a ping, a mention or a dressed link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def session_url(session: Session) -> str:
    return f"{settings.PUBLIC_URL}/sessions/{session.pk}"


def status_text(session: Session, done: bool = False) -> str:
    """One line of where the run is: state, current tool, todos, cost, link."""
    bits = ["Done" if done else ("Working" if session.status != "idle" else "Queued")]
    tool = Part.objects.filter(session=session, type="tool").order_by("-id").first()
    if tool is not None and not done:
        state = tool.data.get("state", {}).get("status")
        bits.append(f"tool: {escape(str(tool.data.get('tool')))} ({escape(str(state))})")
    todos = list(Todo.objects.filter(session=session).values_list("status", flat=True))
    if todos:
        bits.append(f"todos: {sum(1 for s in todos if s == 'completed')}/{len(todos)} done")
    bits.append(f"cost ${session.cost:.4f}")
    bits.append(f"<{session_url(session)}|open in Hangar>")
    return " · ".join(bits)


def summary_text(thread: SlackThread, session: Session) -> str:
    last = Message.objects.filter(session=session, role="assistant").order_by("-id").first()
    text = ""
    if last is not None:
        text = "".join(
            p.data.get("text", "") for p in Part.objects.filter(message=last, type="text").order_by("id")
        )
        error = (last.data.get("error") or {}).get("data", {}).get("message")
        if error:
            text = f"{text}\nError: {error}".strip()
    text = escape(text if len(text) <= 2_500 else text[:2_500] + "…")
    return f"<@{thread.requester_slack_id}> {text or '(no answer text)'}\n<{session_url(session)}|open in Hangar>"
