"""The server name (SNI) of a TLS ClientHello, for the egress proxy's CONNECT check. Stdlib only.

`first_flight(recv, head)` reads just enough of what the client sent into a CONNECT tunnel to tell
whether it starts a TLS handshake, and if so which name it asks for. A TLS record that does not parse is
reported as such (the proxy refuses it: fail closed), not as "no SNI".
"""

from __future__ import annotations

MAX_RECORD = 5 + (1 << 14)  # one TLS record: a ClientHello of any sane size fits
NOT_TLS = "not-tls"
MALFORMED = "malformed"


def first_flight(recv, head: bytes) -> tuple[bytes, str | None]:
    """(bytes read so far, verdict): verdict is NOT_TLS, MALFORMED, None (TLS without SNI) or the
    lower-cased SNI host. `recv()` returns more bytes or b"" at EOF."""
    data = head
    while len(data) < 5:
        chunk = recv()
        if not chunk:
            return data, NOT_TLS
        data += chunk
    if data[0] != 0x16 or data[1] != 0x03:
        return data, NOT_TLS
    need = 5 + int.from_bytes(data[3:5], "big")
    if need > MAX_RECORD:
        return data, MALFORMED
    while len(data) < need:
        chunk = recv()
        if not chunk:
            return data, MALFORMED
        data += chunk
    try:
        return data, _sni(data[5:need])
    except (IndexError, ValueError):
        return data, MALFORMED


def _sni(hello: bytes) -> str | None:
    if hello[0] != 0x01:  # handshake type: ClientHello
        raise ValueError("not a ClientHello")
    end = 4 + int.from_bytes(hello[1:4], "big")
    if end > len(hello):
        raise ValueError("ClientHello split across records")
    pos = 4 + 2 + 32  # version, random
    pos += 1 + hello[pos]  # session id
    pos += 2 + int.from_bytes(hello[pos : pos + 2], "big")  # cipher suites
    pos += 1 + hello[pos]  # compression methods
    if pos >= end:
        return None  # no extensions at all
    ext_end = pos + 2 + int.from_bytes(hello[pos : pos + 2], "big")
    pos += 2
    if ext_end > end:
        raise ValueError("extensions overrun")
    while pos + 4 <= ext_end:
        kind, size = (
            int.from_bytes(hello[pos : pos + 2], "big"),
            int.from_bytes(hello[pos + 2 : pos + 4], "big"),
        )
        body = hello[pos + 4 : pos + 4 + size]
        pos += 4 + size
        if kind != 0:
            continue
        names_end = 2 + int.from_bytes(body[0:2], "big")
        at = 2
        while at + 3 <= names_end:
            name_type, length = body[at], int.from_bytes(body[at + 1 : at + 3], "big")
            name = body[at + 3 : at + 3 + length]
            at += 3 + length
            if name_type == 0:
                if len(name) != length:
                    raise ValueError("truncated server name")
                return name.decode("ascii").lower().rstrip(".")
        raise ValueError("server_name extension without a host name")
    return None
