"""Run shell commands: streamed output, head+tail cap, timeout and cancel kill the process group."""

from __future__ import annotations

import codecs
import json
import os
import select
import signal
import subprocess
import threading
import time
from typing import BinaryIO

from wire import BadRequest, OpError, arg

WORKSPACE = "/workspace"
DEFAULT_CAP = 256 * 1024  # bytes of output kept (half head, half tail)
# Where a command's complete output may be kept when it outgrows the cap (the tool-output folder).
SPILL_DIR = "/tmp/hangar/tool-output"
STREAM_CHUNK = 64 * 1024
KILL_GRACE_S = 2.0
# Let the kernel's OOM killer prefer the command over the agent: unprivileged processes may
# raise (never lower) their own oom_score_adj, and children inherit it.
OOM_PREFIX = "echo 1000 >/proc/self/oom_score_adj 2>/dev/null; "
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/home/hangar",
    "USER": "hangar",
    "LANG": "C.UTF-8",
    "SHELL": "/bin/bash",
    "TERM": "dumb",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}
# An allowlist sandbox gets its egress proxy through the container's environment; commands see
# it too. (Overriding it from a command gains nothing: the network has no other way out.)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy")
BASE_ENV.update({k: os.environ[k] for k in PROXY_VARS if k in os.environ})


class _Capture:
    """Keeps the first and last `cap/2` bytes of a stream and counts what falls in between.

    With a `spill` path, the complete stream is also kept in that file once it outgrows the cap (so
    the caller can point at the whole output): the file is started the first time bytes would be
    dropped, from the head and the not-yet-trimmed tail, which together are everything so far. Small
    outputs never touch the disk. A write that fails (the tmpfs is full) abandons the file."""

    def __init__(self, cap: int, spill: str | None = None) -> None:
        self.cap = cap
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.total_bytes = 0
        self.newlines = 0
        self.spill_path = spill
        self.spill_file: BinaryIO | None = None
        self.spill_failed = False

    def add(self, data: bytes) -> None:
        self.total_bytes += len(data)
        self.newlines += data.count(b"\n")
        if self.spill_file is not None:
            self._spill(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - self.half
            if excess > 0:
                if self.spill_path and self.spill_file is None and not self.spill_failed:
                    self._start_spill(self.spill_path)
                del self.tail[:excess]
                self.dropped += excess

    def _start_spill(self, path: str) -> None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.spill_file = open(path, "wb")  # noqa: SIM115  # closed by close_spill
        except OSError:
            self.spill_failed = True
            return
        self._spill(bytes(self.head) + bytes(self.tail))

    def _spill(self, data: bytes) -> None:
        if self.spill_file is None:
            return
        try:
            self.spill_file.write(data)
        except OSError:
            self.spill_failed = True
            self.close_spill()

    def close_spill(self) -> str | None:
        """The spill file's path if it holds the complete output, else None (and no file is left)."""
        if self.spill_file is None:
            return None
        try:
            self.spill_file.close()
        except OSError:
            self.spill_failed = True
        self.spill_file = None
        if self.spill_failed and self.spill_path:
            try:
                os.unlink(self.spill_path)
            except OSError:
                pass
            return None
        return self.spill_path

    def text(self) -> str:
        if not self.dropped:
            return (self.head + self.tail).decode("utf-8", "replace")
        marker = f"\n\n... {self.dropped} bytes of output dropped ...\n\n"
        return self.head.decode("utf-8", "replace") + marker + self.tail.decode("utf-8", "replace")


def kill_group(proc: subprocess.Popen, grace_s: float = KILL_GRACE_S) -> None:
    """TERM the whole process group, then KILL it if anything is left after the grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            try:  # the leader is gone; give stragglers in its group the rest of the grace
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.02)
    # KILL until the group is empty: members that were mid-fork (a fork bomb) leave children
    # that a single killpg can miss.
    for _ in range(250):
        proc.poll()  # reap the leader: a zombie still counts as a group member
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.02)


class ExecRunner:
    def __init__(self, state_dir: str) -> None:
        self.env_file = os.path.join(state_dir, "env.json")
        self.session_env = self._load_env()
        self.cancels: dict[str, threading.Event] = {}
        self.lock = threading.Lock()

    def _load_env(self) -> dict:
        try:
            with open(self.env_file) as f:
                env = json.load(f)
            return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
        except (OSError, ValueError):
            return {}

    def bind(self, args: dict) -> dict:
        """Set the session's sandbox-safe env (persisted on the volume so it survives resume)."""
        env = arg(args, "env", dict, {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise BadRequest("env must map strings to strings")
        tmp = self.env_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(env, f)
        os.replace(tmp, self.env_file)
        self.session_env = env
        return {"bound": True}

    def environment(self, extra: dict | None) -> dict:
        env = dict(BASE_ENV)
        env.update(self.session_env)
        if extra:
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
                raise BadRequest("env must map strings to strings")
            env.update(extra)
        return env

    def cancel(self, args: dict) -> dict:
        target = arg(args, "target", str)
        with self.lock:
            event = self.cancels.get(target)
        if event:
            event.set()
        return {"cancelled": bool(event)}

    def cancel_all(self, args: dict) -> dict:
        """Cancel every running command (their process groups are killed). The host calls it when a
        new runner takes over a session whose previous runner died: that runner's command is orphaned.
        Background processes a command left behind and terminals are not touched."""
        with self.lock:
            events = list(self.cancels.values())
        for event in events:
            event.set()
        return {"cancelled": len(events)}

    def run(self, args: dict) -> dict:
        rid = args["id"]
        command = arg(args, "command", str)
        cwd = arg(args, "cwd", str, WORKSPACE)
        timeout = arg(args, "timeout", float, None)
        cap = arg(args, "max_output", int, DEFAULT_CAP)
        spill = arg(args, "full_output_path", str, None)
        if spill is not None:
            spill = os.path.normpath(spill)
            if os.path.dirname(spill) != SPILL_DIR:
                raise BadRequest(f"full_output_path must be a file under {SPILL_DIR}")
        stream = arg(args, "stream", bool, False)
        env = self.environment(arg(args, "env", dict, None))
        if not cwd.startswith("/"):
            cwd = os.path.join(WORKSPACE, cwd)
        if not os.path.isdir(cwd):
            raise OpError(f"cwd does not exist: {cwd}", "FileNotFound")
        cancel = threading.Event()
        with self.lock:
            self.cancels[rid] = cancel
        try:
            return self._run(
                args["_out"], rid, command, cwd, env, timeout, _Capture(cap, spill), stream, cancel
            )
        finally:
            with self.lock:
                self.cancels.pop(rid, None)

    def _run(self, writer, rid, command, cwd, env, timeout, capture, stream, cancel) -> dict:
        proc = subprocess.Popen(
            ["/bin/bash", "-c", OOM_PREFIX + command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
        fd = proc.stdout.fileno()  # type: ignore[union-attr]  # started with stdout PIPE
        os.set_blocking(fd, False)
        cap = capture.cap
        streamed = 0
        decoder = codecs.getincrementaldecoder("utf-8")("replace")  # chunks may split a character
        deadline = time.monotonic() + timeout if timeout else None
        status, exited_at = "exited", None
        try:
            while True:
                # Checked on every pass: a flooding command always has data ready.
                if cancel.is_set():
                    status = "cancelled"
                elif deadline and time.monotonic() > deadline:
                    status = "timeout"
                if status != "exited":
                    kill_group(proc)
                    break
                ready, _, _ = select.select([fd], [], [], 0.05)
                data = None
                if ready:
                    try:
                        data = os.read(fd, STREAM_CHUNK)
                    except BlockingIOError:
                        pass
                    if data == b"":
                        break  # EOF: every writer closed the pipe
                if data:
                    capture.add(data)
                    if stream and streamed < cap:  # stop streaming once the cap is reached
                        piece = data[: cap - streamed]
                        streamed += len(piece)
                        writer.frame(rid, "out", data=decoder.decode(piece))
                    continue
                if proc.poll() is not None:
                    # The shell exited but a background child still holds the pipe: give it a
                    # moment to flush, then stop waiting for it (it keeps running detached).
                    exited_at = exited_at or time.monotonic()
                    if time.monotonic() - exited_at > 0.2:
                        break
        finally:
            proc.stdout.close()  # type: ignore[union-attr]
            full_output_path = capture.close_spill()
        code = proc.wait()
        return {
            "status": status,
            "exit_code": code if status == "exited" else None,
            "output": capture.text(),
            "dropped_bytes": capture.dropped,
            "total_bytes": capture.total_bytes,
            "total_lines": capture.newlines + 1,
            "full_output_path": full_output_path,
        }


def kill_all(args: dict) -> dict:
    """Kill every process of the sandbox user except the agent (recovery from a fork bomb or
    runaway background jobs). kill(-1) spares the caller and init; repeat until nothing is left."""
    for _ in range(250):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return {"killed": True}
        time.sleep(0.02)
    return {"killed": False}
