"""What a Slack thread says of its session: Slack's control characters escaped in anything from the model or
a workspace, the run's one-line status, the end-of-run summary that mentions the requester, the link to the
web app. Read by the tasks that post them (tasks.py) and by the Bolt handlers (bolt.py)."""

from django.conf import settings

from hangar.conversations.models import Message, Part, Session, Todo
from hangar.integrations.slack.models import SlackThread


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
