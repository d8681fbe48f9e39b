"""A Slack workspace installed for an org (bot token encrypted at rest), channels bound to projects,
Slack users linked to Hangar members, and threads that are sessions."""

from django.conf import settings
from django.db import models


class SlackInstall(models.Model):
    org = models.ForeignKey("accounts.Org", on_delete=models.CASCADE, related_name="slack_installs")
    team_id = models.CharField(max_length=32, unique=True)
    team_name = models.CharField(max_length=200, blank=True)
    bot_user_id = models.CharField(max_length=32)
    bot_token_encrypted = models.TextField()
    default_project = models.ForeignKey(
        "projects.Project", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    installed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(auto_now_add=True)


class SlackChannel(models.Model):
    """A channel bound to a project: sessions started there run in it."""

    install = models.ForeignKey(SlackInstall, on_delete=models.CASCADE, related_name="channels")
    channel_id = models.CharField(max_length=32)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["install", "channel_id"], name="uniq_slack_channel")]


class SlackUserLink(models.Model):
    """A Slack user is a Hangar member only through this explicit link (made by the member, signed in)."""

    install = models.ForeignKey(SlackInstall, on_delete=models.CASCADE, related_name="user_links")
    slack_user_id = models.CharField(max_length=32)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["install", "slack_user_id"], name="uniq_slack_user_link")
        ]


class SlackThread(models.Model):
    """The Slack thread is the session. `status_ts` is the one status message of the current run."""

    install = models.ForeignKey(SlackInstall, on_delete=models.CASCADE, related_name="threads")
    channel_id = models.CharField(max_length=32)
    thread_ts = models.CharField(max_length=32)
    session = models.OneToOneField(
        "conversations.Session", on_delete=models.CASCADE, related_name="slack_thread"
    )
    requester_slack_id = models.CharField(max_length=32)
    status_ts = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["install", "channel_id", "thread_ts"], name="uniq_slack_thread")
        ]


class SlackPermissionMessage(models.Model):
    """The message carrying the buttons of a permission request or of the agent's questions (`request_id`:
    per_ or que_), updated once it is answered."""

    thread = models.ForeignKey(SlackThread, on_delete=models.CASCADE, related_name="+")
    request_id = models.CharField(max_length=40, unique=True)
    message_ts = models.CharField(max_length=32)
