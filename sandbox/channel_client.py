"""A worker's side of the TCP agent channel: a connection, and a session's sandbox without Docker.

`TcpAgentConnection` is an `AgentConnection` (same call/send/stream interface, replies by id, one
connection shared by every thread of the process, MAX_FRAME on every line) whose bytes are plain lines
on a TCP socket instead of docker's multiplexed stream. It proves the session's secret first
(agent/channel.py: HMAC-SHA256 over the agent's nonce); the agent closes a connection that cannot.

`connect_session(session_id)` gives the `DockerSandbox` of a session whose container a sandbox host
created and started (its registry files say where the agent listens and which secret it holds). It
needs no Docker socket; a broken connection is reopened from the registry on the next call. Bringing a
stopped sandbox back is the host's (today: any process with Docker, `DockerSandboxes`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import socket
import time

from sandbox import channel, containers, registry, volumes
from sandbox.connection import MAX_FRAME, AgentConnection
from sandbox.docker_backend import DockerSandbox
from sandbox.protocol import SandboxSpec, SandboxUnavailable

CONNECT_TIMEOUT_S = 5.0
HELLO_MAX = 256  # agent/channel.py: the hello and the answer are short lines


class TcpAgentConnection(AgentConnection):
    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock, lock_fd=None, mode="tcp")

    @classmethod
    def connect(cls, address: str, port: int, secret: bytes, *, wait_s: float = 0.0) -> TcpAgentConnection:
        """Connect and authenticate; SandboxUnavailable if the agent is unreachable or refuses. `wait_s`:
        how long a refused connection is retried (a container just started: its agent binds in ~0.1 s)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                sock = socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S)
                break
            except ConnectionRefusedError as exc:
                if time.monotonic() >= deadline:
                    raise SandboxUnavailable(f"sandbox agent at {address}:{port} refused: {exc}") from exc
                time.sleep(0.02)
            except OSError as exc:
                raise SandboxUnavailable(f"sandbox agent at {address}:{port} is unreachable: {exc}") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _keepalive(sock)
            hello = json.loads(_read_line(sock))
            nonce = hello.get("nonce") if isinstance(hello, dict) else None
            if not isinstance(nonce, str) or len(nonce) > 128:
                raise SandboxUnavailable("sandbox agent sent no usable hello")
            answer = hmac.new(secret, nonce.encode("ascii", "replace"), hashlib.sha256).hexdigest()
            sock.sendall(json.dumps({"hmac": answer}).encode() + b"\n")
            if json.loads(_read_line(sock)) != {"ok": True}:
                raise SandboxUnavailable("sandbox agent refused the channel")
            sock.settimeout(None)
        except (OSError, ValueError) as exc:
            sock.close()
            raise SandboxUnavailable(f"sandbox agent at {address}:{port} refused the channel: {exc}") from exc
        except SandboxUnavailable:
            sock.close()
            raise
        return cls(sock)

    def _read_loop(self) -> None:
        """Plain lines (no docker stream headers); a line over MAX_FRAME drops the connection."""
        line = bytearray()
        try:
            while chunk := self.sock.recv(1 << 18):
                line += chunk
                start = 0
                while (nl := line.find(b"\n", start)) >= 0:
                    if nl > start:
                        self._dispatch(bytes(line[start:nl]))
                    start = nl + 1
                del line[:start]
                if len(line) > MAX_FRAME:
                    return  # an endless line: drop the connection rather than grow (finally: _die)
        except OSError:
            pass
        finally:
            self._die()


def _keepalive(sock: socket.socket) -> None:
    """A peer that vanished (its host lost, a network cut) is noticed within about a minute: the reader
    sees the error, pending calls fail with SandboxUnavailable and the next call reconnects, instead of
    each call waiting out its own timeout on a connection nothing will ever answer."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, option):  # Linux names; elsewhere the system's defaults stand
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _read_line(sock: socket.socket) -> bytes:
    """One handshake line, byte by byte up to HELLO_MAX (nothing after it is consumed: it is the
    reader thread's)."""
    line = bytearray()
    while len(line) <= HELLO_MAX:
        byte = sock.recv(1)
        if not byte:
            raise SandboxUnavailable("sandbox agent closed the channel")
        if byte == b"\n":
            return bytes(line)
        line += byte
    raise SandboxUnavailable("sandbox agent sent an over-long handshake line")


def open_session_connection(session_id: str) -> TcpAgentConnection:
    """A fresh authenticated connection to the session's agent, from the registry alone."""
    key = volumes.session_key(session_id)
    endpoint = registry.channel_endpoint(key)
    if endpoint is None:
        raise SandboxUnavailable(f"session {session_id} has no agent channel recorded")
    address, port, volume_id = endpoint
    secret = channel.read_secret(volume_id)
    if secret is None:
        raise SandboxUnavailable(f"session {session_id} has no channel secret")
    return TcpAgentConnection.connect(address, port, secret)


class RegistryReopener:
    """Reopens a dropped channel from the registry (the `Reopener` a docker-less DockerSandbox uses)."""

    def reopen(self, box: DockerSandbox) -> AgentConnection:
        return open_session_connection(box.session_id)


def connect_session(session_id: str, spec: SandboxSpec | None = None) -> DockerSandbox:
    """The session's sandbox over TCP, without Docker. `spec` defaults to the one the host registered."""
    key = volumes.session_key(session_id)
    if spec is None:
        record = registry.lookup(key)
        if record is None:
            raise SandboxUnavailable(f"session {session_id} has no sandbox")
        fields = {f.name for f in dataclasses.fields(SandboxSpec)}
        given = {k: v for k, v in (record.get("spec") or {}).items() if k in fields}
        spec = SandboxSpec(**given | {"session_id": session_id})
    box = DockerSandbox(
        RegistryReopener(),
        spec,
        containers.session_container_name(session_id),
        open_session_connection(session_id),
    )
    if spec.env:
        box._call("bind", {"env": spec.env})  # as the host's attach does: the session's env, every time
    return box
