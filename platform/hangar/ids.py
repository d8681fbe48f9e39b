"""OpenCode-format identifiers: `{prefix}_{12 hex of (ms * 0x1000 + counter)}{14 base62 random}`.

Ascending ids (messages, parts) sort oldest first; descending ids (sessions) invert the time bits so
the newest sorts first. The per-millisecond counter keeps ids from one process strictly ordered even
in bursts; across processes the millisecond still orders them.
"""

import re
import secrets
import threading
import time

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PREFIXES = {
    "session": "ses",
    "message": "msg",
    "part": "prt",
    "permission": "per",
    "question": "que",
    "event": "evt",
    "user": "usr",
    "share": "shr",
}
_lock = threading.Lock()
_last_ms = 0
_counter = 0


def _random_suffix(length: int = 14) -> str:
    # One read of the OS's randomness per id (88 bits for 14 base62 digits, ~83 bits), not one per digit:
    # ids are made for every part of every step.
    n = int.from_bytes(secrets.token_bytes(11), "big")
    digits = []
    for _ in range(length):
        n, d = divmod(n, 62)
        digits.append(_BASE62[d])
    return "".join(digits)


def _next_stamp() -> int:
    global _last_ms, _counter
    with _lock:
        now = int(time.time() * 1000)
        if now != _last_ms:
            _last_ms, _counter = now, 0
        _counter += 1
        return now * 0x1000 + _counter


def ascending(kind: str) -> str:
    return f"{_PREFIXES[kind]}_{_next_stamp() & 0xFFFFFFFFFFFF:012x}{_random_suffix()}"


def descending(kind: str) -> str:
    return f"{_PREFIXES[kind]}_{(~_next_stamp()) & 0xFFFFFFFFFFFF:012x}{_random_suffix()}"


def new_session_id() -> str:
    return descending("session")


def new_message_id() -> str:
    return ascending("message")


def new_part_id() -> str:
    return ascending("part")


def new_permission_id() -> str:
    return ascending("permission")


def new_question_id() -> str:
    return ascending("question")


MESSAGE_ID = re.compile(r"^msg_[0-9a-f]{12}[0-9A-Za-z]{14}$")
CLIENT_CLOCK_SKEW_MS = 60_000


def client_message_id_problem(message_id: str, *, last: str | None) -> str | None:
    """Why a client-chosen message id cannot be used, or None. Ids order a session's messages, so a client
    id must be OpenCode's format, sort after the session's last message (`last`) and not come from more
    than a minute in the future (a far-future id would sort after every answer the run writes)."""
    if not MESSAGE_ID.match(message_id):
        return "messageID must be OpenCode's format: msg_ + 12 hex digits + 14 base62 characters"
    if last is not None and message_id <= last:
        return "messageID must be newer than the session's last message"
    stamp = int(message_id[4:16], 16)
    if stamp > ((int(time.time() * 1000) + CLIENT_CLOCK_SKEW_MS) * 0x1000) & 0xFFFFFFFFFFFF:
        return "messageID is from the future"
    return None
