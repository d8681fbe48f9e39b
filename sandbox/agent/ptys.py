"""Interactive shells on pseudo-terminals, for the web terminal.

pty_open starts `bash -i` on a new pty and streams {"ev": "pty_out", "data"} frames on the
open request's id until the shell exits ({"ev": "pty_exit"}); pty_write / pty_resize /
pty_close address it by that id.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import select
import signal
import struct
import termios
import threading

from wire import BadRequest, OpError, arg


class _Pty:
    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd


class Ptys:
    def __init__(self, execs) -> None:
        self.execs = execs
        self.open_ptys: dict[str, _Pty] = {}
        self.lock = threading.Lock()

    def _get(self, args: dict) -> _Pty:
        target = arg(args, "target", str)
        with self.lock:
            pty = self.open_ptys.get(target)
        if not pty:
            raise OpError(f"no open pty {target}")
        return pty

    def open(self, args: dict) -> dict:
        """Blocks (on a pool thread) for the life of the shell; replies with its exit code."""
        rid, writer = args["id"], args["_out"]
        cols, rows = arg(args, "cols", int, 80), arg(args, "rows", int, 24)
        env = self.execs.environment(arg(args, "env", dict, None)) | {"TERM": "xterm-256color"}
        cwd = arg(args, "cwd", str, "/workspace")
        pid, fd = os.forkpty()
        if pid == 0:  # child: only async-signal-safe-ish work, then exec
            try:
                os.chdir(cwd)
                os.execve("/bin/bash", ["bash", "-i"], env)
            finally:
                os._exit(127)
        pty = _Pty(pid, fd)
        _set_size(fd, cols, rows)
        with self.lock:
            self.open_ptys[rid] = pty
        writer.frame(rid, "pty_ready", pid=pid)  # the host may write from now on
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], 0.5)
                if ready:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:  # EIO: the slave side closed (shell exited)
                        data = b""
                    if not data:
                        break
                    writer.frame(rid, "pty_out", data=decoder.decode(data))
        finally:
            with self.lock:
                self.open_ptys.pop(rid, None)
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        writer.frame(rid, "pty_exit", code=code)
        return {"exit_code": code}

    def write(self, args: dict) -> dict:
        pty = self._get(args)
        data = arg(args, "data", str).encode()
        while data:
            data = data[os.write(pty.fd, data) :]
        return {}

    def resize(self, args: dict) -> dict:
        pty = self._get(args)
        _set_size(pty.fd, arg(args, "cols", int), arg(args, "rows", int))
        return {}

    def close(self, args: dict) -> dict:
        pty = self._get(args)
        for sig in (signal.SIGHUP, signal.SIGKILL):
            try:
                # forkpty returns in the parent before the child's setsid(): until then the child is
                # in the agent's own process group, which must never be signalled (it killed the agent).
                if os.getpgid(pty.pid) == pty.pid:
                    os.killpg(pty.pid, sig)
                else:
                    os.kill(pty.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
        return {}


def _set_size(fd: int, cols: int, rows: int) -> None:
    if not (0 < cols < 10000 and 0 < rows < 10000):
        raise BadRequest("cols and rows must be between 1 and 9999")
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
