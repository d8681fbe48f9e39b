"""What a share link opens (hangar.conversations.share_services): who may open it, and the read-only view of
the conversation it shows.

Who: an unknown, expired or revoked link is not found; so is one whose org has since turned sharing off.
A `members` link (or a `link` one in an org whose policy is now `members`) opens only for a signed-in
member of the session's org, of any role; anyone else is told it is not found, never that it exists.

What: the messages in OpenCode's `{info, parts}` shape, so the web app draws them as it draws a session,
but only what a reader needs: the text the people and the agent wrote, the tool calls with their input and
output, tasks and agent mentions, file names. No step bookkeeping (snapshots, costs, tokens), no file
contents sent as data, no permission metadata. The values of the project's secret environment variables,
and strings shaped like common credentials, are masked wherever they appear. There is no terminal."""

from __future__ import annotations

import json
import re
from typing import Any

from django.utils import timezone

from hangar.accounts.models import Membership
from hangar.conversations.models import Message, Part, SessionShare
from hangar.projects.crypto import decrypt
from hangar.projects.models import ProjectEnvVar

TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,64}$")
MAX_MESSAGES = 500
MAX_OUTPUT = 20_000
MASK = "[redacted]"
# Shapes of credentials that may have been typed or printed: provider keys, code-host and Slack tokens,
# cloud access keys, bearer headers, private key blocks.
CREDENTIAL = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{16,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)"
)
PART_TYPES = {"text", "reasoning", "tool", "subtask", "agent", "file", "compaction", "patch"}
INFO_KEYS = {"id", "sessionID", "role", "time", "agent", "mode", "modelID", "providerID", "parentID", "error"}
STATE_KEYS = {"status", "input", "output", "title", "error", "time"}


def shared_session(token: str, user) -> SessionShare:
    """The live share the token names, if `user` (maybe anonymous) may open it; SessionShare.DoesNotExist
    otherwise, whatever the reason."""
    if not isinstance(token, str) or not TOKEN.fullmatch(token):
        raise SessionShare.DoesNotExist()
    share = (
        SessionShare.objects.select_related("org", "session", "session__project")
        .filter(token=token, revoked_at=None, expires_at__gt=timezone.now())
        .first()
    )
    if share is None or share.org.share_policy == "off":
        raise SessionShare.DoesNotExist()
    if share.audience == "link" and share.org.share_policy == "link":
        return share
    if user is None or not user.is_authenticated:
        raise SessionShare.DoesNotExist()
    if not Membership.objects.filter(user=user, org_id=share.org_id).exists():
        raise SessionShare.DoesNotExist()
    return share


def share_view(share: SessionShare) -> dict[str, Any]:
    """The read-only view of the shared session (module doc): the session's title and state, the link's
    audience and expiry, and its most recent MAX_MESSAGES messages, masked."""
    session = share.session
    mask = _masker(session.project_id)
    rows = list(Message.objects.filter(session=session).order_by("-id")[:MAX_MESSAGES])[::-1]
    parts: dict[str, list[dict[str, Any]]] = {}
    for part in Part.objects.filter(message__in=rows, type__in=PART_TYPES).order_by("id"):
        shown = _part(part.data)
        if shown is not None:
            parts.setdefault(part.message_id, []).append(mask(shown))
    messages = [
        {"info": mask({k: v for k, v in m.data.items() if k in INFO_KEYS}), "parts": parts.get(m.pk, [])}
        for m in rows
    ]
    return {
        "session": {
            "id": session.pk,
            "title": mask(session.title),
            "status": session.status,
            "time": {
                "created": int(session.created_at.timestamp() * 1000),
                "updated": int(session.updated_at.timestamp() * 1000),
            },
        },
        "share": {"audience": share.audience, "expires": int(share.expires_at.timestamp() * 1000)},
        "messages": messages,
    }


def _part(data: dict[str, Any]) -> dict[str, Any] | None:
    kind = data.get("type")
    base: dict[str, Any] = {k: data[k] for k in ("id", "sessionID", "messageID", "type") if k in data}
    if kind in ("text", "reasoning"):
        return None if data.get("synthetic") else {**base, "text": data.get("text", "")}
    if kind == "tool":
        state = {k: v for k, v in (data.get("state") or {}).items() if k in STATE_KEYS}
        if isinstance(state.get("output"), str):
            state["output"] = state["output"][-MAX_OUTPUT:]
        return {**base, "tool": data.get("tool", ""), "callID": data.get("callID", ""), "state": state}
    if kind == "file":
        # The name only: a data: URL is the file itself, a file: URL a path in the sandbox.
        return {**base, "mime": data.get("mime", ""), "filename": data.get("filename") or "file", "url": ""}
    if kind in ("subtask", "agent", "compaction", "patch"):
        return {k: v for k, v in data.items() if k not in ("source", "hash")}
    return None


def _masker(project_id: int):
    secrets = sorted(
        {
            value
            for value in (
                _plain(v)
                for v in ProjectEnvVar.objects.filter(project_id=project_id, secret=True).values_list(
                    "value_encrypted", flat=True
                )
            )
            if value and len(value) >= 6
        },
        key=len,
        reverse=True,
    )

    def mask(value):
        # Through JSON text: every string at any depth, keys included, in one pass per secret.
        text = json.dumps(value)
        for secret in secrets:
            text = text.replace(json.dumps(secret)[1:-1], MASK)
        text = CREDENTIAL.sub(MASK, text)
        return json.loads(text)

    return mask


def _plain(ciphertext: str) -> str:
    try:
        return decrypt(ciphertext)
    except Exception:  # a value no key opens any more cannot be shown either
        return ""
