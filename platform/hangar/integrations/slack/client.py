"""The Slack Web API client for an install (slack_sdk; `SLACK_API_URL` points it elsewhere, as tests do)."""

from django.conf import settings
from slack_sdk import WebClient

from hangar.integrations.slack.models import SlackInstall
from hangar.projects import crypto


def web_client(install: SlackInstall | None = None) -> WebClient:
    token = crypto.decrypt(install.bot_token_encrypted) if install is not None else None
    return WebClient(token=token, base_url=settings.SLACK_API_URL, timeout=10)
