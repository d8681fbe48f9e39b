"""Celery tasks that talk to Slack for a session's thread: the throttled status edit, the end-of-run
summary, permission buttons. Each loads by id and is harmless to run twice."""

from celery import shared_task
from django.core.cache import cache

from hangar.conversations.models import PermissionRequest, QuestionRequest, Session
from hangar.integrations import queue  # noqa: F401  (routes this module's tasks)
from hangar.integrations.slack import selectors, services, texts
from hangar.integrations.slack.client import web_client
from hangar.integrations.slack.models import SlackThread

MAX_OPTION_BUTTONS = 20  # Slack's limit is 25 elements per actions block; one is Dismiss
REPLIES = (
    ("once", "Allow once", "primary"),
    ("always", "Always allow", None),
    ("reject", "Reject", "danger"),
)


def status_show(thread: SlackThread, session: Session, done: bool = False) -> None:
    """Edit the run's status message, or post it if the run has none yet (one per run, however many
    tasks race for its first post: services.thread_status_post_once)."""
    client = web_client(thread.install)
    text = texts.status_text(session, done=done)
    ts = thread.status_ts or services.thread_status_post_once(
        thread=thread,
        post=lambda: client.chat_postMessage(
            channel=thread.channel_id, thread_ts=thread.thread_ts, text=text
        )["ts"],
    )
    if ts:
        client.chat_update(channel=thread.channel_id, ts=ts, text=text)


@shared_task(name="hangar.integrations.slack.status", ignore_result=True)
def slack_status(session_id: str) -> None:
    thread = selectors.thread_for_session(session_id)
    if thread is not None and thread.session.status != "idle":
        status_show(thread, thread.session)


@shared_task(name="hangar.integrations.slack.finish", ignore_result=True)
def slack_finish(session_id: str) -> None:
    thread = selectors.thread_for_session(session_id)
    if thread is None:
        return
    status_show(thread, thread.session, done=True)
    web_client(thread.install).chat_postMessage(
        channel=thread.channel_id,
        thread_ts=thread.thread_ts,
        text=texts.summary_text(thread, thread.session),
    )


def permission_blocks(request: PermissionRequest) -> list[dict]:
    patterns = texts.escape(", ".join(request.patterns)[:500] or "*")
    asked = texts.escape(request.permission)
    return [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"Permission asked: *{asked}* `{patterns}`"},
        },
        {
            "type": "actions",
            "block_id": f"perm:{request.pk}",
            "elements": [
                {
                    "type": "button",
                    "action_id": f"perm_{reply}",
                    "text": {"type": "plain_text", "text": label},
                    "value": request.pk,
                    **({"style": style} if style else {}),
                }
                for reply, label, style in REPLIES
            ],
        },
    ]


def post_buttons(thread: SlackThread | None, request_id: str, text: str, blocks: list[dict]) -> None:
    """Post a request's buttons to its session's thread, once (a task run twice finds them posted)."""
    if thread is None or selectors.permission_message_posted(request_id):
        return
    posted = web_client(thread.install).chat_postMessage(
        channel=thread.channel_id, thread_ts=thread.thread_ts, text=text, blocks=blocks
    )
    services.permission_message_record(thread=thread, request_id=request_id, ts=posted["ts"])


@shared_task(name="hangar.integrations.slack.permission", ignore_result=True)
def slack_permission(request_id: str) -> None:
    request = selectors.pending_request(request_id)
    if request is not None:
        thread = selectors.thread_for_session(request.session_id)
        post_buttons(
            thread,
            request_id,
            f"Permission asked: {texts.escape(request.permission)}",
            permission_blocks(request),
        )


ROUTED_FOR_S = 7 * 24 * 3600  # how long a routed ask's DMs are remembered as sent (its longest expiry)


def route_blocks(request: PermissionRequest) -> list[dict]:
    """The DM to an approver: what is asked, in which session, until when; the same buttons as a thread's."""
    session = request.session
    title = texts.escape(session.title[:150] or session.pk)
    until = (
        f" It expires <!date^{int(request.expires_at.timestamp())}^{{time}}|soon>."
        if request.expires_at
        else ""
    )
    context = {
        "type": "context",
        "elements": [
            {
                "type": "mrkdwn",
                "text": f"You are an approver for <{texts.session_url(session)}|{title}>.{until}",
            }
        ],
    }
    return [*permission_blocks(request), context]


@shared_task(name="hangar.integrations.slack.route", ignore_result=True)
def slack_route(request_id: str) -> None:
    """DM each approver of a routed ask who linked their Slack user (once each, should the task run twice)."""
    request = selectors.pending_request(request_id)
    if request is None or not request.approvers:
        return
    for link in selectors.approver_links(request):
        if not cache.add(f"slack:route:{request_id}:{link.pk}", 1, timeout=ROUTED_FOR_S):
            continue
        web_client(link.install).chat_postMessage(
            channel=link.slack_user_id,
            text=f"Approval needed: {texts.escape(request.permission)}",
            blocks=route_blocks(request),
        )


def question_blocks(request: QuestionRequest, url: str) -> list[dict]:
    """One question with single-choice options: a button per option. Anything else (several questions,
    several choices, the person's own text) is answered in the web app; the message links there. Every
    question message can be dismissed (rejected) from Slack."""
    asked = texts.escape("\n".join(f"*{q['header']}*: {q['question']}" for q in request.questions)[:2900])
    only = request.questions[0] if len(request.questions) == 1 else None
    buttons = []
    if only is not None and not only.get("multiple"):
        buttons = [
            {
                "type": "button",
                "action_id": f"question_answer_{index}",
                "text": {"type": "plain_text", "text": option["label"][:75]},
                "value": request.pk,
            }
            for index, option in enumerate(only["options"][:MAX_OPTION_BUTTONS])
        ]
    else:
        asked += f"\n<{url}|Answer in Hangar>"
    dismiss = {
        "type": "button",
        "action_id": "question_reject",
        "text": {"type": "plain_text", "text": "Dismiss"},
    }
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"The agent asks:\n{asked}"}},
        {
            "type": "actions",
            "block_id": f"question:{request.pk}",
            "elements": [*buttons, {**dismiss, "value": request.pk}],
        },
    ]


@shared_task(name="hangar.integrations.slack.question", ignore_result=True)
def slack_question(request_id: str) -> None:
    request = selectors.pending_question(request_id)
    if request is not None:
        thread = selectors.thread_for_session(request.session_id)
        text = f"The agent asks: {texts.escape(request.questions[0]['question'][:200])}"
        post_buttons(thread, request_id, text, question_blocks(request, texts.session_url(request.session)))
