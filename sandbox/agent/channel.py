"""The agent's network channel: the same JSON-lines protocol on TCP, for workers without the Docker socket.

Off unless the host mounted a session secret at SECRET_PATH (sandbox/channel.py does that when
HANGAR_AGENT_TRANSPORT=tcp): the single-host default (docker attach / relay) is untouched.

The secret file is root's, mode 0400, bind-mounted read-only; the agent reads it while still root,
before it drops to uid 1000 (main.py), so the sandbox's own processes (uid 1000, no capabilities) can
open neither the file nor the agent's memory or environ (the drop makes the agent non-dumpable). The
secret never goes into any environment.

Every connection proves the secret before its first request is read:
  agent   {"hello":"hangar-agent","nonce":"<64 hex>"}\n     a fresh random nonce per connection
  client  {"hmac":"<hex of HMAC-SHA256(secret, nonce)>"}\n within HANDSHAKE_TIMEOUT_S, <= HELLO_MAX bytes
  agent   {"ok":true}\n, then requests and replies exactly as on the relay socket;
a wrong, late, replayed (another connection's nonce) or over-long answer closes the connection. Request
lines are bounded too (MAX_LINE): one over it closes that connection; every other one keeps its service.
Nothing here encrypts: between machines TLS or a private network carries it (docs/scale-out.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import socket
import threading
import time

SECRET_PATH = "/etc/hangar/agent.key"
PORT = 7070
HANDSHAKE_TIMEOUT_S = 5.0
HELLO_MAX = 256
# The largest request is a write of a big file (base64) plus JSON; the host's reply cap is the same.
MAX_LINE = 32 << 20
MAX_CONNECTIONS = 128  # open at once; one over that is closed at accept (the agent stays responsive)


def read_secret(path: str = SECRET_PATH) -> bytes | None:
    """The session secret (32 bytes, hex in the file), or None when the host set up no channel."""
    try:
        with open(path, "rb") as f:
            text = f.read(HELLO_MAX).strip()
    except OSError:
        return None
    try:
        secret = bytes.fromhex(text.decode("ascii"))
    except ValueError:
        return None
    return secret if len(secret) == 32 else None


def bind(port: int = PORT) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(128)
    return server


def expected_answer(secret: bytes, nonce: str) -> str:
    return hmac.new(secret, nonce.encode("ascii"), hashlib.sha256).hexdigest()


class Channel:
    """Accepts TCP connections and hands each authenticated one to `serve(stream, out_file)`."""

    def __init__(self, server: socket.socket, secret: bytes, serve) -> None:
        self.server = server
        self.secret = secret
        self.serve = serve
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                time.sleep(0.05)  # out of descriptors, say: wait rather than spin
                continue
            if not self.slots.acquire(blocking=False):
                conn.close()
                continue
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if not self._handshake(conn):
                    return
                with conn.makefile("rb") as stream, conn.makefile("wb", buffering=0) as out:
                    self.serve(bounded_lines(stream), out)
        except OSError:
            pass
        finally:
            self.slots.release()

    def _handshake(self, conn: socket.socket) -> bool:
        nonce = secrets.token_hex(32)
        conn.settimeout(HANDSHAKE_TIMEOUT_S)  # also bounds the hello's send to a peer that never reads
        conn.sendall(json.dumps({"hello": "hangar-agent", "nonce": nonce}).encode() + b"\n")
        answer = _read_hello(conn)
        if answer is None:
            return False
        try:
            given = json.loads(answer).get("hmac")
        except (ValueError, AttributeError):
            return False
        if not isinstance(given, str) or not hmac.compare_digest(
            given.encode("ascii", "replace"), expected_answer(self.secret, nonce).encode("ascii")
        ):
            return False
        conn.settimeout(None)
        conn.sendall(b'{"ok":true}\n')
        return True


def _read_hello(conn: socket.socket) -> bytes | None:
    """One line of at most HELLO_MAX bytes, read byte-exactly (nothing of the next line is consumed);
    None on EOF, a longer line, or HANDSHAKE_TIMEOUT_S passing (in all: a peer trickling bytes does not
    hold its slot any longer)."""
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
    line = bytearray()
    while len(line) <= HELLO_MAX:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            conn.settimeout(left)
            chunk = conn.recv(HELLO_MAX + 1 - len(line), socket.MSG_PEEK)
        except (TimeoutError, OSError):
            return None
        if not chunk:
            return None
        nl = chunk.find(b"\n")
        take = len(chunk) if nl < 0 else nl + 1
        line += conn.recv(take)
        if nl >= 0:
            return bytes(line[:-1])
    return None


def bounded_lines(stream):
    """The stream's lines, ending the connection at the first one longer than MAX_LINE."""
    while True:
        line = stream.readline(MAX_LINE + 1)
        if not line or (len(line) > MAX_LINE and not line.endswith(b"\n")):
            return
        yield line


def open_channel() -> tuple[socket.socket, bytes] | None:
    """Called by main.py while still root: the secret read and the port bound before the privilege drop.
    None when the host mounted no secret (the single-host default: no TCP at all)."""
    secret = read_secret()
    return None if secret is None else (bind(), secret)
