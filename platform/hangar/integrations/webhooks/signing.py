"""Standard Webhooks signing (https://www.standardwebhooks.com), through its reference package: secrets are
`whsec_<base64>`, a message carries `webhook-id`, `webhook-timestamp` and `webhook-signature:
v1,<base64 HMAC-SHA256 of "id.timestamp.body">`; the verifier refuses timestamps more than 5 minutes off."""

import base64
import secrets
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET_BYTES = 32

__all__ = ["WebhookVerificationError", "new_secret", "sign_headers", "verify"]


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def new_message_id() -> str:
    return "msg_" + secrets.token_urlsafe(18)


def sign_headers(secret: str, msg_id: str, body: str, at: datetime | None = None) -> dict[str, str]:
    """The three headers of a signed message (the timestamp is whole seconds, as the spec says)."""
    at = at or datetime.now(tz=UTC)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, at, body),
    }


def verify(secret: str, body: bytes, headers: dict[str, str]) -> None:
    """Raise WebhookVerificationError unless `headers` sign `body` with `secret` within the tolerance."""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise WebhookVerificationError("body is not UTF-8") from None
    try:
        Webhook(secret).verify(text, headers, json_parse=False)
    except WebhookVerificationError:
        raise
    except (ValueError, TypeError) as exc:  # a malformed signature list or base64 in the headers
        raise WebhookVerificationError("malformed signature headers") from exc
