"""How much a model may send. A model endpoint is chosen by a tenant, so its answer is untrusted input:
every buffer that grows with it is capped, and crossing a cap ends the step with a provider error
("response too large") instead of growing the worker that every other session shares.

Caps (bytes, settings from the environment, see settings.py): the whole response body, one SSE line or
event, one tool call's arguments, one text or reasoning part."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.conf import settings

from hangar.engine.providers.base import ProviderError


class TooLarge(ProviderError):
    def __init__(self, what: str, limit: int, unit: str = "bytes"):
        super().__init__(
            f"response too large: {what} exceeds {limit} {unit}", retryable=False, name="ResponseTooLarge"
        )


def cap(name: str) -> int:
    return int(getattr(settings, name))


def bounded_lines(chunks: Iterable[bytes], *, max_line: int, max_total: int) -> Iterator[str]:
    """The lines of a byte stream, decoded, without their line ends. A line longer than `max_line` or a
    body longer than `max_total` raises TooLarge before it is buffered."""
    pending: list[bytes] = []
    pending_size = total = 0
    for data in chunks:
        if not data:
            continue
        total += len(data)
        if total > max_total:
            raise TooLarge("the response body", max_total)
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            line = data[start:end]
            if pending:
                if pending_size + len(line) > max_line:
                    raise TooLarge("a line of the response", max_line)
                line, pending, pending_size = b"".join([*pending, line]), [], 0
            elif len(line) > max_line:
                raise TooLarge("a line of the response", max_line)
            yield line.rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
        if start < len(data):
            pending.append(data[start:])
            pending_size += len(data) - start
            if pending_size > max_line:
                raise TooLarge("a line of the response", max_line)
    if pending:
        yield b"".join(pending).rstrip(b"\r").decode("utf-8", "replace")
