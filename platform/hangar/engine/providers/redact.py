"""Provider error text reaches the session's events, which every viewer of the session reads. Providers
echo what they were sent ("Incorrect API key provided: sk-abc...", a proxy's "Bearer ..." line), so the
text is redacted before it leaves the adapter: the call's own key (and long fragments of it), and
anything shaped like a key or a bearer token."""

from __future__ import annotations

import re

_SHAPES = [
    (re.compile(r"(?i)(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), r"\1 [redacted]"),
    (re.compile(r"\b(sk|pk|rk|ak|sess|key)[-_][A-Za-z0-9_\-*.]{6,}"), "[redacted]"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{10,}"), "[redacted]"),
    (
        re.compile(
            r"(?i)((?:api[_-]?key|x-api-key|access[_-]?token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;]{4,}"
        ),
        r"\1[redacted]",
    ),
]


def redact(text: str, key: str = "") -> str:
    if key and len(key) >= 8:
        text = text.replace(key, "[redacted]")
        for size in (16, 12, 8):  # a provider's masked echo keeps a prefix or a suffix of the key
            if len(key) > size:
                text = text.replace(key[:size], "[redacted]").replace(key[-size:], "[redacted]")
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text
