"""The slack-bolt app: every request is verified by Bolt against the signing secret and a timestamp
within 5 minutes (views.py also refuses a signature seen before); the install's bot token comes from our
encrypted store. Mentions, DMs and `/hangar` start a session (the thread is the session); replies in a
session's thread prompt it; `stop` aborts; buttons answer permission requests and the agent's questions. An
uninstall, or the revocation of the bot's token, removes the install (services.install_remove)."""

import re
from functools import cache

from django.conf import settings
from rest_framework.exceptions import APIException
from slack_bolt import App
from slack_bolt.authorization import AuthorizeResult

from hangar.errors import DomainError
from hangar.integrations.slack import selectors, services
from hangar.integrations.slack.client import web_client
from hangar.integrations.slack.models import SlackPermissionMessage
from hangar.integrations.slack.options import parse
from hangar.integrations.slack.tasks import status_show
from hangar.integrations.slack.texts import escape


def _authorize(enterprise_id, team_id, logger) -> AuthorizeResult | None:
    install = selectors.install_by_team(team_id)
    if install is None:
        return None
    from hangar.projects import crypto

    return AuthorizeResult(
        enterprise_id=enterprise_id,
        team_id=team_id,
        bot_user_id=install.bot_user_id,
        bot_token=crypto.decrypt(install.bot_token_encrypted),
    )


def _tell(install, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
    web_client(install).chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts)


def link_message(install, slack_user_id: str) -> str:
    url = f"{settings.PUBLIC_URL}/hooks/slack/link?t={services.link_token(install, slack_user_id)}"
    return f"Your Slack account is not linked to a Hangar member yet. Open <{url}|this link> while signed in to Hangar, then ask again."


def _failure(exc: Exception) -> str:
    detail = getattr(exc, "detail", None)
    if isinstance(detail, dict):
        return " ".join(
            str(m)
            for messages in detail.values()
            for m in (messages if isinstance(messages, list) else [messages])
        )
    return str(detail or exc) or "That did not work."


def handle_text(*, team_id: str, channel: str, user: str, text: str, ts: str, thread_ts: str | None) -> None:
    """A message meant for Hangar: follow-up or stop in a session's thread, else a new session."""
    install = selectors.install_by_team(team_id)
    if install is None or not user:
        return
    ask = parse(text)
    thread = selectors.thread_get(install, channel, thread_ts)
    try:
        if thread is not None:
            services.thread_prompt(thread=thread, slack_user_id=user, ask=ask)
            if not ask.is_stop:
                thread.refresh_from_db()
                status_show(thread, thread.session)
            return
        if ask.is_stop or not ask.text:
            return
        thread = services.thread_start(
            install=install, channel_id=channel, thread_ts=thread_ts or ts, slack_user_id=user, ask=ask
        )
        status_show(thread, thread.session)
    except services.NotLinked:
        _tell(install, channel, user, link_message(install, user), thread_ts or ts)
    except (APIException, DomainError, ValueError) as exc:
        _tell(install, channel, user, _failure(exc), thread_ts or ts)


def _on_mention(body, event, logger):
    handle_text(
        team_id=body.get("team_id"),
        channel=event["channel"],
        user=event.get("user", ""),
        text=event.get("text", ""),
        ts=event["ts"],
        thread_ts=event.get("thread_ts"),
    )


def _on_message(body, event, context, logger):
    if event.get("subtype") or event.get("bot_id"):
        return
    text = event.get("text", "")
    if context.bot_user_id and f"<@{context.bot_user_id}>" in text:
        return  # the app_mention event carries it
    install = selectors.install_by_team(body.get("team_id"))
    if install is None:
        return
    in_session_thread = selectors.thread_get(install, event["channel"], event.get("thread_ts")) is not None
    if event.get("channel_type") == "im" or in_session_thread:
        handle_text(
            team_id=body.get("team_id"),
            channel=event["channel"],
            user=event.get("user", ""),
            text=text,
            ts=event["ts"],
            thread_ts=event.get("thread_ts"),
        )


def _on_command(ack, command, logger):
    ack()
    install = selectors.install_by_team(command.get("team_id"))
    if install is None:
        return
    channel, user, text = command["channel_id"], command["user_id"], command.get("text", "").strip()
    words = text.split()
    try:
        if words[:1] == ["link"]:
            _tell(install, channel, user, link_message(install, user))
            return
        if words[:1] == ["bind"]:
            slug = parse(text).options.get("project", "")
            services.channel_bind(install=install, slack_user_id=user, channel_id=channel, project_slug=slug)
            _tell(install, channel, user, f"This channel now runs sessions in project {slug}.")
            return
    except services.NotLinked:
        _tell(install, channel, user, link_message(install, user))
        return
    except (APIException, DomainError, ValueError) as exc:
        _tell(install, channel, user, _failure(exc))
        return
    if not parse(text).text:
        _tell(
            install,
            channel,
            user,
            "Usage: /hangar <what to do> [project=slug agent=plan model=provider/model]",
        )
        return
    try:
        services.member_actor(install, user)
    except services.NotLinked:
        _tell(install, channel, user, link_message(install, user))
        return
    # The command has no message of its own: the thread hangs under a message that quotes it.
    posted = web_client(install).chat_postMessage(
        channel=channel, text=f"<@{user}> asked: {parse(text).text[:2900]}"
    )
    handle_text(
        team_id=install.team_id, channel=channel, user=user, text=text, ts=posted["ts"], thread_ts=None
    )


def _on_permission_button(ack, body, action, logger):
    ack()
    reply = action["action_id"].removeprefix("perm_")
    install = selectors.install_by_team((body.get("team") or {}).get("id"))
    user = (body.get("user") or {}).get("id", "")
    channel = (body.get("channel") or {}).get("id", "")
    if install is None:
        return
    try:
        request = services.permission_answer(
            install=install, slack_user_id=user, request_id=action.get("value", ""), reply=reply
        )
    except services.NotLinked:
        _tell(install, channel, user, link_message(install, user))
        return
    except (APIException, DomainError):
        _tell(install, channel, user, "You may not answer this request.")
        return
    held = SlackPermissionMessage.objects.filter(request_id=request.pk).first()
    # The message pressed: the thread's buttons, or an approver's DM (a routed ask), which has no record.
    ts = (body.get("container") or {}).get("message_ts") or (held.message_ts if held else "")
    if ts:
        word = {"once": "Allowed once", "always": "Always allowed", "reject": "Rejected"}[request.status]
        web_client(install).chat_update(
            channel=channel,
            ts=ts,
            text=f"{word} by <@{user}>: {escape(request.permission)}",
            blocks=[],
        )


def _on_question_button(ack, body, action, logger):
    ack()
    install = selectors.install_by_team((body.get("team") or {}).get("id"))
    user = (body.get("user") or {}).get("id", "")
    channel = (body.get("channel") or {}).get("id", "")
    if install is None:
        return
    action_id = action["action_id"]
    option = None if action_id == "question_reject" else int(action_id.removeprefix("question_answer_"))
    try:
        request = services.question_answer(
            install=install, slack_user_id=user, request_id=action.get("value", ""), option=option
        )
    except services.NotLinked:
        _tell(install, channel, user, link_message(install, user))
        return
    except (APIException, DomainError, ValueError):
        _tell(install, channel, user, "You may not answer this question.")
        return
    held = SlackPermissionMessage.objects.filter(request_id=request.pk).first()
    if held is not None:
        said = (
            "Dismissed"
            if request.status == "rejected"
            else f"Answered “{escape(str((request.answers or [[]])[0][0]))}”"
        )
        web_client(install).chat_update(
            channel=channel, ts=held.message_ts, text=f"{said} by <@{user}>", blocks=[]
        )


def _on_uninstalled(body, logger):
    install = selectors.install_by_team(body.get("team_id"))
    if install is not None:
        services.install_remove(install=install, reason="app_uninstalled")


def _on_tokens_revoked(body, event, logger):
    """Only the bot's token matters here: a user token revoked (we keep none) changes nothing."""
    install = selectors.install_by_team(body.get("team_id"))
    revoked_bots = (event.get("tokens") or {}).get("bot") or []
    if install is not None and install.bot_user_id in revoked_bots:
        services.install_remove(install=install, reason="tokens_revoked")


def bolt_app() -> App:
    return _bolt_app(settings.SLACK_SIGNING_SECRET, settings.SLACK_API_URL)


@cache
def _bolt_app(signing_secret: str, api_url: str) -> App:
    app = App(
        signing_secret=signing_secret,
        # Bolt's CallableAuthorize answers None (no install for the team: the request is refused) as it
        # answers a result; its annotation only names AuthorizeResult.
        authorize=_authorize,  # type: ignore[arg-type]
        client=web_client(),
        process_before_response=True,  # handlers are short: they store and enqueue, Slack calls are fast
        token_verification_enabled=False,
    )
    app.event("app_mention")(_on_mention)
    app.event("message")(_on_message)
    app.event("app_uninstalled")(_on_uninstalled)
    app.event("tokens_revoked")(_on_tokens_revoked)
    app.command("/hangar")(_on_command)
    app.action(re.compile(r"^perm_(once|always|reject)$"))(_on_permission_button)
    app.action(re.compile(r"^question_(answer_\d{1,2}|reject)$"))(_on_question_button)
    return app
