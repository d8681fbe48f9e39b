"""One multiplexed connection to a sandbox's agent, shared by many threads.

Transport: the owner of a per-sandbox host lock (flock) attaches to the agent's stdin/stdout
with `docker attach`. A second process that finds the lock taken opens a private stream instead,
`docker exec main.py --relay` to the agent's unix socket (an exec to open, then as fast per round trip;
bench/sandbox.py prints both): docker copies every attacher's stdin into one pipe in 4 KB reads,

so two concurrent attachers could interleave bytes inside a request line. The lock is released
when the connection closes or its process dies, so the next process attaches again.

A reader thread demultiplexes docker's 8-byte stream headers, splits lines and hands each reply
to the waiting caller by id; stream frames go to the caller's callback (on the reader thread:
callbacks must be quick and must not call back into the sandbox).

Whatever the container writes is untrusted: a line (or a docker frame) longer than MAX_FRAME drops the
connection instead of growing the worker's memory; the pending calls fail with SandboxUnavailable and the
next call reconnects. The agent starts every line with a newline, so junk left in the pipe by a dropped
connection ends before the next reply and costs that reply nothing.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

import docker.errors

from sandbox.protocol import FileNotFound, SandboxError, SandboxUnavailable

RELAY_CMD = ["python3", "-S", "-u", "/opt/hangar/agent/main.py", "--relay"]
# The largest reply is read_bytes at its limit (16 MiB, base64: 21.3 MiB) plus JSON: room to spare.
MAX_FRAME = 32 << 20


def _raw_socket(sock: object) -> socket.socket:
    # docker-py returns a SocketIO (unix) or a socket; we want the socket itself for recv/sendall.
    raw = getattr(sock, "_sock", sock)
    if not isinstance(raw, socket.socket):
        raise SandboxUnavailable(f"docker returned no socket to the agent ({type(raw).__name__})")
    return raw


class _Pending:
    __slots__ = ("done", "on_frame", "reply")

    def __init__(self, on_frame: Callable[[dict[str, Any]], None] | None) -> None:
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None
        self.on_frame = on_frame


class AgentConnection:
    def __init__(self, sock: object, *, lock_fd: int | None, mode: str) -> None:
        self._keepalive = sock  # docker-py's wrapper owns the HTTP response; keep it alive
        self.sock = _raw_socket(sock)
        self.mode = mode  # "attach" or "relay"
        self._lock_fd = lock_fd
        self.prefix = uuid.uuid4().hex[:12]
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._state = threading.Lock()
        self._send_lock = threading.Lock()
        self.dead = False
        self.stderr_tail = b""
        threading.Thread(target=self._read_loop, name=f"agent-reader-{self.prefix}", daemon=True).start()

    @classmethod
    def open(cls, api: docker.APIClient, container_id: str, lock_file: str) -> AgentConnection:
        """Attach if this process can take the sandbox's lock, else open a private relay."""
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            exec_id = api.exec_create(container_id, RELAY_CMD, stdin=True, stdout=True, stderr=True)["Id"]
            return cls(api.exec_start(exec_id, socket=True), lock_fd=None, mode="relay")
        try:
            sock = api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        except BaseException:
            os.close(fd)
            raise
        return cls(sock, lock_fd=fd, mode="attach")

    @property
    def holds_lock(self) -> bool:
        return self._lock_fd is not None

    def release_lock(self) -> None:
        """Keep the stream but let other processes attach. Only for a connection that sends nothing
        until `take_lock` succeeds again (the warm pool's idle connections)."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    def take_lock(self, lock_file: str) -> bool:
        """Take the attach lock back before sending again; False if another process attached."""
        if self._lock_fd is not None:
            return True
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._lock_fd = fd
        return True

    # --- reading ------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        buf = bytearray()
        line = bytearray()
        try:
            while True:
                chunk = self.sock.recv(1 << 18)
                if not chunk:
                    break
                buf += chunk
                pos = 0
                while len(buf) - pos >= 8:
                    size = int.from_bytes(buf[pos + 4 : pos + 8], "big")
                    if size > MAX_FRAME:
                        return  # a docker frame we would have to hold whole: drop (finally: _die)
                    if len(buf) - pos - 8 < size:
                        break
                    stream, payload = buf[pos], bytes(buf[pos + 8 : pos + 8 + size])
                    pos += 8 + size
                    if stream == 2:
                        self.stderr_tail = (self.stderr_tail + payload)[-4096:]
                        continue
                    line += payload
                    while (nl := line.find(b"\n")) >= 0:
                        if nl:
                            self._dispatch(bytes(line[:nl]))
                        del line[: nl + 1]
                    if len(line) > MAX_FRAME:
                        return  # an endless line: drop the connection rather than grow
                del buf[:pos]
        except OSError:
            pass
        finally:
            self._die()

    def _dispatch(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            return
        with self._state:
            rid = msg.get("id") if isinstance(msg, dict) else None
            call = self._pending.get(rid) if isinstance(rid, str) else None
        if call is None:
            return  # an error about a line we never sent as such, or a late frame
        if "ev" in msg:
            if call.on_frame:
                try:
                    call.on_frame(msg)
                except Exception:
                    pass  # a broken callback must not kill the reader
            return
        call.reply = msg
        call.done.set()

    def _die(self) -> None:
        with self._state:
            self.dead = True
            pending, self._pending = self._pending, {}
        for call in pending.values():
            call.done.set()  # reply stays None: the caller raises SandboxUnavailable
        self.close()

    # --- calling ------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> str:
        """Send a request without waiting (e.g. cancel). Returns its id."""
        rid = message.get("id") or f"{self.prefix}:{next(self._ids)}"
        line = json.dumps(message | {"id": rid}, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            with self._send_lock:
                self.sock.sendall(line)
        except OSError as exc:
            self._die()
            raise SandboxUnavailable(f"connection to the sandbox agent is broken: {exc}") from exc
        return rid

    def call(
        self,
        op: str,
        args: dict[str, Any] | None = None,
        *,
        timeout: float = 120.0,
        on_frame: Callable[[dict[str, Any]], None] | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[str], None] | None = None,
    ) -> Any:
        """Send one request and wait for its reply; returns the reply's result (decoded JSON, as the
        agent sent it: each caller reads the fields of its op)."""

        rid = f"{self.prefix}:{next(self._ids)}"
        call = _Pending(on_frame)
        with self._state:
            if self.dead:
                raise SandboxUnavailable("connection to the sandbox agent is closed")
            self._pending[rid] = call
        try:
            self.send({"id": rid, "op": op, **(args or {})})
            if on_start:
                on_start(rid)
            if cancel is None:
                finished = call.done.wait(timeout)
            else:
                finished, cancelled = False, False
                for _ in range(int(timeout / 0.05) + 1):
                    if call.done.wait(0.05):
                        finished = True
                        break
                    if cancel.is_set() and not cancelled:
                        cancelled = True
                        self.send({"op": "cancel", "target": rid})
        finally:
            with self._state:
                self._pending.pop(rid, None)
        if call.reply is None:
            if finished or self.dead:
                raise SandboxUnavailable(f"sandbox agent went away during {op}" + self._stderr_hint())
            raise SandboxUnavailable(f"sandbox agent did not answer {op} within {timeout:.0f}s")
        if call.reply.get("ok"):
            return call.reply.get("result")
        error = call.reply.get("error") or {}
        kind, message = error.get("type"), error.get("message", "unknown error")
        raise (FileNotFound if kind == "FileNotFound" else SandboxError)(message)

    def _stderr_hint(self) -> str:
        tail = self.stderr_tail.decode("utf-8", "replace").strip()
        return f" (agent stderr: {tail[-500:]})" if tail else ""

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # releases the attach lock
