"""Private instances of the shared services, for tests that stop, restart or stall them.

The machine's Postgres, Redis and dockerd serve every engineer's tests at once: a fault test never touches
them. It starts its own redis-server or Postgres cluster on a free port in a temporary directory, points
the code under test at it, and restarts or stalls that one. `StallProxy` sits between a client and a
server and can stop answering on the connections it holds (a peer gone without a reset), which a
restart cannot show."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class PrivateRedis:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_port(self.port)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)

    def restart(self, down_s: float = 0.5) -> None:
        self.stop()
        time.sleep(down_s)  # the outage itself: the fault under test
        self.start()

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)


class StallProxy:
    """TCP proxy to 127.0.0.1:`target`. `stall()`: every connection open now stops passing bytes, for
    good (the client's writes vanish, nothing comes back); connections made later pass normally."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._conns: list[dict] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            state = {"stalled": False, "socks": (client, upstream)}
            with self._lock:
                self._conns.append(state)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst, state), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, state: dict) -> None:
        try:
            while data := src.recv(65536):
                if not state["stalled"]:
                    dst.sendall(data)
        except OSError:
            pass

    def stall(self) -> None:
        with self._lock:
            for state in self._conns:
                state["stalled"] = True

    def close(self) -> None:
        self._server.close()
        with self._lock:
            for state in self._conns:
                for sock in state["socks"]:
                    sock.close()


class PrivatePostgres:
    """A throwaway cluster (initdb + pg_ctl as the postgres user) on a free port, trust auth."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="hangar-pg-")
        self.data = os.path.join(self.dir, "data")
        shutil.chown(self.dir, "postgres", "postgres")
        self.bin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]

    def _as_postgres(self, *args: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *args], check=True, stdout=subprocess.DEVNULL, cwd=self.dir
        )

    def url(self, db: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}"

    def start(self) -> PrivatePostgres:
        if not os.path.exists(self.data):
            self._as_postgres(
                f"{self.bin}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync"
            )
        self._as_postgres(
            f"{self.bin}/pg_ctl",
            "-D",
            self.data,
            "-l",
            os.path.join(self.dir, "log"),
            "-w",
            "-o",
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100",
            "start",
        )
        return self

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(f"{self.bin}/pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def restart(self, down_s: float = 0.5) -> None:
        self.stop("immediate")
        time.sleep(down_s)  # the outage itself: the fault under test
        self.start()

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
