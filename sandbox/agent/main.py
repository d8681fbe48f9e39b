"""Hangar in-container agent: JSON requests in, JSON replies and stream frames out, one per line.

Stdlib only; starts as root under docker's init, binds the relay socket in root's /run/hangar, then
drops to uid 1000 for good (commands run as uid 1000 too: the drop leaves the agent non-dumpable, so
they cannot open its /proc/<pid>/fd, mem or ptrace it, and cannot replace the socket). It serves two
kinds of connection:
  * its own stdin/stdout, reached by the host through `docker attach` (the fast path), and
  * a unix socket (SOCKET_PATH), reached through `docker exec main.py --relay`, which pipes the
    exec's stdio to that socket, and
  * TCP port 7070, only when the host mounted a session secret (channel.py: HMAC handshake first),
    for workers that hold no Docker socket.
Why two: every attacher writes into the same stdin pipe, and dockerd copies each attacher's
bytes in 4 KB reads, so two processes attached at once could interleave inside a line. The host
therefore lets only the holder of a per-sandbox lock attach; any other process gets its own
private stream through the relay (slower to open: an exec; equally fast afterwards).

  request  {"id": "<client>:<n>", "op": "exec", ...args}
  reply    {"id": ..., "ok": true, "result": ...} | {"id": ..., "ok": false, "error": {"type", "message"}}
  frame    {"id": ..., "ev": "out" | "pty_out" | "pty_exit", ...}
The agent never dies on bad input: every failure becomes an error reply (id null when the
request carried no usable id).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import channel
import execs
import fileops
import lsp
import mcpservers
import ptys
import snapshots
from wire import BadRequest, OpError, Writer

STATE_DIR = os.environ.get("HANGAR_STATE_DIR", "/home/hangar/.hangar")
SOCKET_PATH = os.environ.get("HANGAR_AGENT_SOCKET", "/run/hangar/agent.sock")
RELAY_CONNECT_WAIT_S = 15.0
SANDBOX_UID = 1000


class Agent:
    def __init__(self) -> None:
        self.execs = execs.ExecRunner(STATE_DIR)
        self.snapshots = snapshots.Snapshots(STATE_DIR + "/snapshot", fileops.WORKSPACE)
        self.ptys = ptys.Ptys(self.execs)
        self.mcp = mcpservers.McpServers(self.execs.environment)
        self.lsp = lsp.LanguageServers()
        # Blocking ops (exec, pty, snapshots) can each hold a thread for a long time.
        self.pool = ThreadPoolExecutor(max_workers=256, thread_name_prefix="op")
        self.handlers = {
            "ping": lambda a: {"pid": os.getpid()},
            "bind": self.execs.bind,
            "exec": lambda a: self.execs.run(a),
            "kill_all": execs.kill_all,
            "read": fileops.read,
            "read_bytes": fileops.read_bytes,
            "write": fileops.write,
            "stat": fileops.stat,
            "list": fileops.list_tree,
            "glob": fileops.glob,
            "grep": fileops.grep,
            "mkdir": fileops.mkdir,
            "remove": fileops.remove,
            "move": fileops.move,
            "snapshot_init": self.snapshots.init,
            "snapshot_track": lambda a: self.snapshots.track(),
            "snapshot_track_changed": self.snapshots.track_changed,
            "snapshot_diff": self.snapshots.diff,
            "snapshot_changed": self.snapshots.changed,
            "snapshot_restore": self.snapshots.restore,
            "snapshot_revert": self.snapshots.revert,
            "snapshot_gc": self.snapshots.gc,
            "pty_open": self.ptys.open,
            "pty_close": self.ptys.close,
            "mcp": self.mcp.request,
            "mcp_stop": self.mcp.stop_all,
            "lsp_touch": self.lsp.touch,
            "lsp_query": self.lsp.query,
            "lsp_status": self.lsp.status,
            "lsp_stop": self.lsp.stop_all,
        }
        # Quick, non-blocking ops answered on the reader thread so they never queue behind work, and
        # without the CPU of a hand-off to a pool thread on each request. `stat` is one lstat (no

        # open: a fifo cannot block it); the read/write/edit tools ask for one on every call.
        self.inline = {
            "cancel": self.execs.cancel,
            "cancel_all": self.execs.cancel_all,
            "pty_write": self.ptys.write,
            "pty_resize": self.ptys.resize,
            "ping": self.handlers.pop("ping"),
            # What the reaper asks before hibernating: never stop a sandbox mid-command.
            "busy": lambda a: {"execs": len(self.execs.cancels), "ptys": len(self.ptys.open_ptys)},
            "stat": self.handlers.pop("stat"),
        }

    def handle_line(self, line: bytes, writer: Writer) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            writer.error(None, "BadRequest", "malformed JSON")
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("id"), str):
            writer.error(None, "BadRequest", "a request is an object with a string id")
            return
        rid, op = msg["id"], msg.get("op")
        msg["_out"] = writer  # streamed frames go back on the connection that asked
        if op in self.inline:
            self._call(self.inline[op], rid, msg, writer)
        elif op in self.handlers:
            self.pool.submit(self._call, self.handlers[op], rid, msg, writer)
        else:
            writer.error(rid, "BadRequest", f"unknown op {op!r}")

    def _call(self, fn, rid: str, args: dict, writer: Writer) -> None:
        try:
            result = fn(args)
        except OpError as exc:
            writer.error(rid, exc.kind, str(exc))
        except BadRequest as exc:
            writer.error(rid, "BadRequest", str(exc))
        except FileNotFoundError as exc:
            writer.error(rid, "FileNotFound", f"{exc.strerror}: {exc.filename}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            writer.error(rid, "BadRequest", f"{type(exc).__name__}: {exc}")
        except OSError as exc:
            writer.error(rid, "SandboxError", f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        except Exception as exc:  # the agent must outlive any single request
            writer.error(rid, "SandboxError", f"{type(exc).__name__}: {exc}")
        else:
            writer.reply(rid, result)

    def serve(self, stream, writer: Writer) -> None:
        for line in stream:
            if line.strip():
                try:
                    self.handle_line(line, writer)
                except Exception as exc:  # last line of defence: never die on input
                    writer.error(None, "SandboxError", f"{type(exc).__name__}: {exc}")

    def listen(self, server: socket.socket) -> None:
        """Serve relay connections on the unix socket, one thread per connection."""
        while True:
            conn, _ = server.accept()
            threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()

    def _serve_conn(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as stream, conn.makefile("wb", buffering=0) as out:
            try:
                self.serve(stream, Writer(out))
            except OSError:
                pass


def relay() -> None:
    """`main.py --relay`: pipe this process's stdin/stdout to the agent's unix socket."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A relay may start while the container is new (another process's connect, as the engine makes it),
    # before the agent has bound its socket, its first act: wait for it that long, never fail at once.
    deadline = time.monotonic() + RELAY_CONNECT_WAIT_S
    while True:
        try:
            sock.connect(SOCKET_PATH)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)

    def upstream() -> None:
        while data := os.read(0, 65536):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    while data := sock.recv(65536):
        os.write(1, data)


def bind_socket() -> socket.socket:
    """The relay socket, bound (as root, in root's directory: only root's relay can reach it)."""
    try:
        os.unlink(SOCKET_PATH)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(SOCKET_PATH)
    os.chmod(SOCKET_PATH, 0o600)
    server.listen(64)
    return server


def drop_privileges() -> None:
    """Root -> uid/gid 1000 with no supplementary groups, all three ids: the capabilities go with root,
    and the kernel marks the process non-dumpable (its /proc entries become root's)."""
    if os.getuid() != 0:
        return  # started unprivileged (an older container): nothing to drop
    os.setgroups([])
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    if os.getresuid() != (SANDBOX_UID,) * 3 or os.getresgid() != (SANDBOX_UID,) * 3:
        raise SystemExit("could not drop privileges")


def main() -> None:
    if sys.argv[1:] == ["--relay"]:
        relay()
        return
    server = bind_socket()
    tcp = channel.open_channel()  # as root: the secret file is root's
    drop_privileges()
    os.makedirs(STATE_DIR, exist_ok=True)
    agent = Agent()
    threading.Thread(target=agent.listen, args=(server,), daemon=True).start()
    if tcp is not None:
        tcp_channel = channel.Channel(*tcp, lambda lines, out: agent.serve(lines, Writer(out)))
        threading.Thread(target=tcp_channel.run, daemon=True).start()
    # The snapshot repo is made while the container is new (or warming in the pool), not in a
    # session's first step; a track that comes first waits on the repo's lock.
    agent.pool.submit(agent.snapshots.init)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    agent.serve(sys.stdin.buffer, Writer(out))
    # stdin closed for good (it stays open across attaches): wait on the relay socket forever.
    threading.Event().wait()


if __name__ == "__main__":
    main()
