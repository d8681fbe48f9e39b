"""Writes of the Slack integration. Every prompt runs as the Hangar member the Slack user linked
explicitly, with that member's role (the engine services check it); an unlinked user gets NotLinked and
nothing runs. Installs, bindings and links are audited."""

import hmac
import secrets
from collections.abc import Callable

from django.core import signing
from django.db import transaction
from rest_framework.exceptions import NotFound, ValidationError

from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Role
from hangar.accounts.selectors import require_role
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record
from hangar.conversations.models import PermissionRequest, QuestionRequest, Session
from hangar.conversations.services import session_create
from hangar.engine import reply_services
from hangar.engine import services as engine
from hangar.integrations.slack import selectors
from hangar.integrations.slack.models import (
    SlackChannel,
    SlackInstall,
    SlackPermissionMessage,
    SlackThread,
    SlackUserLink,
)
from hangar.integrations.slack.options import Ask
from hangar.projects import crypto
from hangar.projects.models import Project

LINK_SALT = "hangar.slack.link"
INSTALL_SALT = "hangar.slack.install"
LINK_MAX_AGE_S = 24 * 3600
INSTALL_STATE_MAX_AGE_S = 600


class NotLinked(Exception):
    """The Slack user has no Hangar member behind it (or that member has left the org)."""


def member_actor(install: SlackInstall, slack_user_id: str) -> Actor:
    user = selectors.linked_user(install, slack_user_id)
    membership = Membership.objects.filter(user=user, org_id=install.org_id).first() if user else None
    if membership is None:
        raise NotLinked(slack_user_id)
    return Actor(
        type=ActorType.USER,
        org_id=install.org_id,
        user=user,
        membership=membership,
        label=f"{user.email} via slack",
        request_id=f"slack:{install.team_id}:{slack_user_id}"[:64],
    )


def link_token(install: SlackInstall, slack_user_id: str) -> str:
    return signing.dumps({"i": install.pk, "u": slack_user_id}, salt=LINK_SALT)


def link_target(token: str) -> tuple[SlackInstall, str] | None:
    """(the install, the Slack user id) a link token names, if it verifies and has not expired."""
    try:
        data = signing.loads(token, salt=LINK_SALT, max_age=LINK_MAX_AGE_S)
    except signing.BadSignature:
        return None
    install = SlackInstall.objects.filter(pk=data["i"]).first()
    return (install, data["u"]) if install is not None else None


def user_link(*, actor: Actor, token: str) -> SlackUserLink:
    """Link the signed-in member to the Slack user named in the signed `token` (from the bot's message)."""
    try:
        data = signing.loads(token, salt=LINK_SALT, max_age=LINK_MAX_AGE_S)
    except signing.BadSignature:
        raise ValidationError({"token": ["This link is invalid or has expired."]}) from None
    install = SlackInstall.objects.filter(pk=data["i"]).first()
    if install is None or not Membership.objects.filter(user=actor.user, org_id=install.org_id).exists():
        raise NotFound()
    with transaction.atomic():
        link, _ = SlackUserLink.objects.update_or_create(
            install=install, slack_user_id=data["u"], defaults={"user": actor.user}
        )
        audit_record(
            actor=actor,
            action="slack.user.link",
            target=link,
            data={"team": install.team_id, "slack_user": data["u"]},
            org_id=install.org_id,
        )
    return link


def install_state(*, actor: Actor) -> tuple[str, str]:
    """(the OAuth `state`, the browser's nonce). The state says who asked to install, for which org, and
    carries the nonce (signed, checked at the callback); the nonce goes to the browser that asked as a
    cookie, so the state is good only in that browser (RFC 6749 10.12)."""
    if actor.org_id is None:
        raise NotFound()
    require_role(actor, actor.org_id, Role.ADMIN)
    nonce = secrets.token_urlsafe(24)
    return signing.dumps({"o": actor.org_id, "u": actor.user_id, "n": nonce}, salt=INSTALL_SALT), nonce


def install_state_check(state: str, nonce: str) -> dict:
    """The state's data, if it verifies, is recent and was started by the browser holding `nonce`."""
    try:
        data = signing.loads(state, salt=INSTALL_SALT, max_age=INSTALL_STATE_MAX_AGE_S)
    except signing.BadSignature:
        raise ValidationError({"state": ["Invalid or expired install state."]}) from None
    if not nonce or not hmac.compare_digest(str(data.get("n", "")), nonce):
        raise ValidationError({"state": ["This install was started in another browser; start it again."]})
    return data


def install_complete(*, state: str, nonce: str, oauth: dict) -> SlackInstall:
    """Store the workspace from `oauth.v2.access`'s answer; the bot token is encrypted at rest."""
    data = install_state_check(state, nonce)
    team = oauth.get("team") or {}
    if not oauth.get("ok") or not team.get("id") or not oauth.get("access_token"):
        raise ValidationError({"code": ["Slack refused the install."]})
    existing = SlackInstall.objects.filter(team_id=team["id"]).first()
    if existing is not None and existing.org_id != data["o"]:
        raise ValidationError({"team": ["This workspace is installed for another organization."]})
    actor = Actor(type=ActorType.USER, org_id=data["o"], user=None, label=f"user:{data['u']} via slack")
    with transaction.atomic():
        install, _ = SlackInstall.objects.update_or_create(
            team_id=team["id"],
            defaults={
                "org_id": data["o"],
                "team_name": team.get("name", "")[:200],
                "bot_user_id": oauth.get("bot_user_id", ""),
                "bot_token_encrypted": crypto.encrypt(oauth["access_token"]),
                "installed_by_id": data["u"],
            },
        )
        audit_record(actor=actor, action="slack.install", target=install, data={"team": team["id"]})
    return install


def install_remove(*, install: SlackInstall, reason: str) -> None:
    """Slack says the app is gone from the workspace (`app_uninstalled`) or its bot token was revoked
    (`tokens_revoked`): the token is useless and must not be kept, so the install goes, with its channel
    bindings, user links and thread map. The sessions themselves stay the org's; nothing starts from that
    workspace until it is installed again. Audited as the system (Slack told us)."""
    actor = Actor(type=ActorType.SYSTEM, org_id=install.org_id, user=None, label="slack")
    with transaction.atomic():
        audit_record(
            actor=actor,
            action="slack.uninstall",
            target=install,
            data={"team": install.team_id, "reason": reason},
        )
        install.delete()


def channel_bind(
    *, install: SlackInstall, slack_user_id: str, channel_id: str, project_slug: str
) -> SlackChannel:
    actor = member_actor(install, slack_user_id)
    require_role(actor, install.org_id, Role.ADMIN)
    project = Project.objects.filter(org_id=install.org_id, slug=project_slug).first()
    if project is None:
        raise ValidationError({"project": [f"No project {project_slug!r} in this organization."]})
    with transaction.atomic():
        channel, _ = SlackChannel.objects.update_or_create(
            install=install, channel_id=channel_id, defaults={"project": project}
        )
        audit_record(
            actor=actor,
            action="slack.channel.bind",
            target=channel,
            data={"channel": channel_id, "project": project.pk},
        )
    return channel


def _project_for(install: SlackInstall, channel_id: str, ask: Ask) -> Project:
    if ask.options.get("project"):
        project = Project.objects.filter(org_id=install.org_id, slug=ask.options["project"]).first()
        if project is None:
            raise ValidationError(
                {"project": [f"No project {ask.options['project']!r} in this organization."]}
            )
        return project
    bound = (
        SlackChannel.objects.filter(install=install, channel_id=channel_id).select_related("project").first()
    )
    if bound is not None:
        return bound.project
    if install.default_project is not None:
        return install.default_project
    projects = list(Project.objects.filter(org_id=install.org_id)[:2])
    if len(projects) == 1:
        return projects[0]
    raise ValidationError(
        {"project": ["Bind this channel to a project (/hangar bind project=slug) or add project=slug."]}
    )


def _model(ask: Ask) -> dict | None:
    provider, _, model = ask.options.get("model", "").partition("/")
    return {"providerID": provider, "modelID": model} if model else None


def thread_start(
    *, install: SlackInstall, channel_id: str, thread_ts: str, slack_user_id: str, ask: Ask
) -> SlackThread:
    """A new session for a new thread, prompted with the message; one transaction."""
    actor = member_actor(install, slack_user_id)
    project = _project_for(install, channel_id, ask)
    with transaction.atomic():
        session = session_create(
            actor=actor,
            project=project,
            title=ask.text[:80] or "Slack",
            agent=ask.options.get("agent"),
            model=_model(ask),
            source="slack",
        )
        thread = SlackThread.objects.create(
            install=install,
            channel_id=channel_id,
            thread_ts=thread_ts,
            session=session,
            requester_slack_id=slack_user_id,
        )
        engine.session_prompt(
            actor=actor,
            session=session,
            parts=[{"type": "text", "text": ask.text}],
            agent=ask.options.get("agent"),
        )
    return thread


def thread_prompt(*, thread: SlackThread, slack_user_id: str, ask: Ask) -> None:
    """A reply in the thread: a follow-up prompt (or `stop`), as the member who wrote it."""
    actor = member_actor(thread.install, slack_user_id)
    session = Session.objects.get(pk=thread.session_id)
    if ask.is_stop:
        engine.session_abort(actor=actor, session=session)
        return
    with transaction.atomic():
        SlackThread.objects.filter(pk=thread.pk).update(requester_slack_id=slack_user_id, status_ts="")
        engine.session_prompt(
            actor=actor,
            session=session,
            parts=[{"type": "text", "text": ask.text}],
            agent=ask.options.get("agent"),
            model=_model(ask),
        )


def permission_answer(
    *, install: SlackInstall, slack_user_id: str, request_id: str, reply: str
) -> PermissionRequest:
    """A button press: only a linked member of the session's org with at least the member role may answer
    (reply_services.permission_reply checks the role and audits; the actor's label says it came from Slack)."""
    actor = member_actor(install, slack_user_id)
    request = (
        PermissionRequest.objects.filter(pk=request_id, session__org_id=install.org_id)
        .select_related("session")
        .first()
    )
    if request is None:
        raise NotFound()
    return reply_services.permission_reply(actor=actor, request=request, reply=reply)


def question_answer(
    *, install: SlackInstall, slack_user_id: str, request_id: str, option: int | None
) -> QuestionRequest:
    """A question button: `option` is the chosen option's index (the question's only question), None
    dismisses. Only a linked member may answer (reply_services.question_reply checks the role and audits)."""
    actor = member_actor(install, slack_user_id)
    request = (
        QuestionRequest.objects.filter(pk=request_id, session__org_id=install.org_id)
        .select_related("session")
        .first()
    )
    if request is None:
        raise NotFound()
    if option is None:
        return reply_services.question_reject(actor=actor, request=request)
    options = request.questions[0]["options"] if len(request.questions) == 1 else []
    if not 0 <= option < len(options):
        raise NotFound()
    return reply_services.question_reply(actor=actor, request=request, answers=[[options[option]["label"]]])


# --- what the tasks post (tasks.py): the messages later edits and button presses refer to -----------


def thread_status_post_once(*, thread: SlackThread, post: Callable[[], str]) -> str | None:
    """Post the run's status message with `post` (returns its ts) unless it is posted already; its ts if
    it was (for an edit instead), None if this call posted it. The thread's row is locked meanwhile, so a
    status task and the run's finish, both first for a run, post one message, not two."""
    with transaction.atomic():
        ts = SlackThread.objects.select_for_update().filter(pk=thread.pk).values_list("status_ts", flat=True)
        current = ts[0] if ts else ""
        if current:
            thread.status_ts = current
            return current
        thread_status_posted(thread=thread, ts=post())
        return None


def thread_status_posted(*, thread: SlackThread, ts: str) -> None:
    """The run's status message is posted: its later edits go to `ts` (the next prompt clears it)."""
    SlackThread.objects.filter(pk=thread.pk).update(status_ts=ts)
    thread.status_ts = ts


def permission_message_record(*, thread: SlackThread, request_id: str, ts: str) -> None:
    """The message carrying a request's buttons; the first recorded stays (the task may run twice)."""
    SlackPermissionMessage.objects.get_or_create(
        request_id=request_id, defaults={"thread": thread, "message_ts": ts}
    )
