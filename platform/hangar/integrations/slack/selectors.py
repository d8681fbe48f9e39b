"""Reads for the Slack integration."""

from hangar.conversations.models import PermissionRequest, QuestionRequest
from hangar.integrations.slack.models import SlackInstall, SlackPermissionMessage, SlackThread, SlackUserLink


def install_by_team(team_id: str | None) -> SlackInstall | None:
    if not team_id:
        return None
    return SlackInstall.objects.filter(team_id=team_id).select_related("org", "default_project").first()


def thread_get(install: SlackInstall, channel_id: str, thread_ts: str | None) -> SlackThread | None:
    if not thread_ts:
        return None
    return (
        SlackThread.objects.filter(install=install, channel_id=channel_id, thread_ts=thread_ts)
        .select_related("session")
        .first()
    )


def linked_user(install: SlackInstall, slack_user_id: str):
    link = (
        SlackUserLink.objects.filter(install=install, slack_user_id=slack_user_id)
        .select_related("user")
        .first()
    )
    return link.user if link and link.user.is_active else None


def thread_for_session(session_id: str) -> SlackThread | None:
    return SlackThread.objects.filter(session_id=session_id).select_related("install", "session").first()


def pending_request(request_id: str) -> PermissionRequest | None:
    return PermissionRequest.objects.filter(pk=request_id, status="pending").select_related("session").first()


def approver_links(request: PermissionRequest) -> list[SlackUserLink]:
    """The Slack users of a routed request's approvers, in the installs of the request's own org."""
    return list(
        SlackUserLink.objects.filter(
            install__org_id=request.session.org_id, user_id__in=request.approvers, user__is_active=True
        ).select_related("install")
    )


def pending_question(request_id: str) -> QuestionRequest | None:
    return QuestionRequest.objects.filter(pk=request_id, status="pending").select_related("session").first()


def permission_message_posted(request_id: str) -> bool:
    """Whether a request's buttons were posted (a permission's or a question's: one message each)."""
    return SlackPermissionMessage.objects.filter(request_id=request_id).exists()
