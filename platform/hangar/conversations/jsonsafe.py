"""JSON for Postgres' jsonb. jsonb refuses a NUL character (\\u0000) and a lone UTF-16 surrogate, both of
which a model's text or a tool's output can carry (a binary file printed by a command, a provider's
broken escape); one such string failed the whole write and crashed the run. They are replaced by U+FFFD
at the store boundary, so what is stored, published and later shown to the model is the same text."""

from __future__ import annotations

import json
import re
from typing import Any

_BAD = re.compile("[\x00\ud800-\udfff]")


def clean(value):
    """`value` with every NUL and surrogate code point in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _BAD.sub("\ufffd", value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def suspect(text: str) -> bool:
    """Whether json.dumps output (ASCII-escaped) may hold one: a NUL or any surrogate escape (a valid
    pair for an emoji is cleaned too: Python strings never hold valid pairs as two code points)."""
    return "\\u0000" in text or "\\ud" in text


def cleaned(value) -> tuple[Any, str]:
    """`value`, cleaned, and its JSON text: one dump when there is nothing to clean (nearly every write),
    the whole walk only when the text shows a suspect escape."""
    text = json.dumps(value)
    if suspect(text):
        value = clean(value)
        text = json.dumps(value)
    return value, text


def dumps(value) -> str:
    return cleaned(value)[1]
