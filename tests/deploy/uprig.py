"""`./deploy/up.sh` run as a person runs it in a terminal, for the tests that use Hangar the way its users
do (tests/deploy/test_first_week.py): start it, read its banner, stop it with Ctrl-C or TERM and check
that nothing it started is left running."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from tests.deploy.conftest import start_script
from tests.deploy.test_up import children_of_groups
from tests.engine.conftest import ROOT

BANNER_FIELD = re.compile(r"\s+(Hangar is up|Login|API token|OpenCode URL):\s+(.+?)\s*$")


class Up:
    """One run of up.sh under the caller's umask 077 (up's own once reached the worker, and every clone
    failed in the git jail), its output and errors on one pipe, read line by line."""

    def __init__(self, env: dict):
        self.lines: list[str] = []
        self.began = time.monotonic()
        self.banner_s = 0.0
        self.proc = start_script(ROOT / "deploy" / "up.sh", env, cwd=ROOT, umask=0o077)

    def banner(self, timeout: float = 180) -> dict[str, str]:
        """Read until the banner's last line; its fields (the login's first word is the email, the next
        the password when this run set one)."""
        deadline, fields = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            assert line, "up.sh exited early:\n" + "".join(self.lines[-40:])
            self.lines.append(line)
            match = BANNER_FIELD.match(line)
            if match:
                fields[match[1]] = match[2]
            if "Ctrl-C stops everything" in line:
                self.banner_s = time.monotonic() - self.began
                return fields
        raise AssertionError("no banner:\n" + "".join(self.lines[-40:]))

    def groups(self) -> list[int]:
        return [
            int(p) for p in subprocess.check_output(["pgrep", "-P", str(self.proc.pid)], text=True).split()
        ]

    def stop(self, sig: signal.Signals = signal.SIGINT) -> list[str]:
        """Ctrl-C (or TERM): up exits 130 (143) and every process group it started is gone; what it said
        while stopping."""
        groups = self.groups()
        assert len(children_of_groups(groups)) >= 3  # web, worker, beat (each its own group)
        self.proc.send_signal(sig)
        rest, _ = self.proc.communicate(timeout=90)
        self.lines.append(rest)
        expected = 130 if sig == signal.SIGINT else 143
        assert self.proc.returncode == expected, "".join(self.lines[-40:])
        assert children_of_groups(groups) == []
        return rest.splitlines()

    def kill(self) -> None:
        """After a failure: up's own stop if it still can, else every group it started (each is a session
        of its own: killing up's group alone would leave them running)."""
        if self.proc.poll() is not None:
            return
        groups = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for pgid in [int(p) for p in groups.split()] + [self.proc.pid]:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def wait_for(
    fetch: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 120, what: str = ""
) -> Any:
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = fetch()
        if done(value):
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: {value}")
