"""Host-side handle on an interactive shell running on a pseudo-terminal in the sandbox."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sandbox.connection import AgentConnection
from sandbox.protocol import SandboxError


class PtyHandle:
    """write/resize/close address the shell; `wait()` returns its exit code once it ends."""

    def __init__(
        self,
        conn: AgentConnection,
        on_output: Callable[[str], None],
        *,
        cols: int,
        rows: int,
        on_exit: Callable[[int | None], None] | None = None,
    ) -> None:
        self._conn = conn
        self._on_output = on_output
        self._on_exit = on_exit
        self._started = threading.Event()
        self._finished = threading.Event()
        self.id: str | None = None
        self.exit_code: int | None = None
        self.error: Exception | None = None
        threading.Thread(target=self._run, args=(cols, rows), daemon=True, name="pty").start()
        if not self._started.wait(10):
            raise SandboxError("pty did not start")

    def _started_as(self, rid: str) -> None:
        self.id = rid

    def _frame(self, msg: dict[str, Any]) -> None:
        if msg.get("ev") == "pty_out":
            self._on_output(msg.get("data", ""))
        elif msg.get("ev") == "pty_ready":
            # The frame names the request: `on_start` may run only after this frame has arrived (it
            # runs once the request is sent), and a close right after the open needs the id.
            self.id = msg["id"]
            self._started.set()

    def _run(self, cols: int, rows: int) -> None:
        try:
            result = self._conn.call(
                "pty_open",
                {"cols": cols, "rows": rows},
                timeout=7 * 24 * 3600,
                on_frame=self._frame,
                on_start=self._started_as,
            )
            self.exit_code = result.get("exit_code")
        except Exception as exc:  # reported through .error / wait()
            self.error = exc
        finally:
            self._started.set()
            self._finished.set()
            if self._on_exit:
                self._on_exit(self.exit_code)

    def write(self, data: str) -> None:
        self._conn.call("pty_write", {"target": self.id, "data": data}, timeout=30)

    def resize(self, cols: int, rows: int) -> None:
        self._conn.call("pty_resize", {"target": self.id, "cols": cols, "rows": rows}, timeout=30)

    def close(self) -> None:
        if not self._finished.is_set():
            try:
                self._conn.call("pty_close", {"target": self.id}, timeout=30)
            except SandboxError:
                pass  # already gone
        self._finished.wait(10)

    def wait(self, timeout: float | None = None) -> int | None:
        self._finished.wait(timeout)
        if self.error:
            raise self.error
        return self.exit_code
