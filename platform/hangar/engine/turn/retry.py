"""Retry delays for provider errors (seed 000 §12.2): retry-after-ms, then retry-after (seconds or an
HTTP date), else 2 s x 2^(attempt-1) capped at 30 s."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

from django.conf import settings

MAX_ATTEMPTS = settings.HANGAR_MAX_RETRIES
BASE_S, CAP_S, HEADER_CAP_S = 2.0, 30.0, 600.0


def retry_delay(attempt: int, headers: dict[str, str] | None = None) -> float:
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    if "retry-after-ms" in headers:
        try:
            return min(max(float(headers["retry-after-ms"]) / 1000, 0.0), HEADER_CAP_S)
        except ValueError:
            pass
    if "retry-after" in headers:
        value = headers["retry-after"]
        try:
            return min(max(float(value), 0.0), HEADER_CAP_S)
        except ValueError:
            try:
                return min(max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0), HEADER_CAP_S)
            except (TypeError, ValueError):
                pass
    return min(BASE_S * 2.0 ** (attempt - 1), CAP_S)
