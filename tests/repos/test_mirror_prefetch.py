"""A mirror prefetch (the fetch overlapped with a sandbox's start, hangar.engine.workspace.prepare) never waits
behind other repositories' fetches: four hosts that accept and never answer do not delay a fifth
repository's fetch (a shared pool of four threads made it wait for theirs, up to git's 900 s)."""

import socket
import threading
import time
import uuid

import pytest

from hangar.conversations.models import Session
from hangar.engine.workspace.prepare import mirror_prefetch
from hangar.projects.models import Project

pytestmark = pytest.mark.timeout(120)


class Silent:
    """A TCP server on 127.0.0.1 that accepts and never answers (a host that hangs a fetch)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()  # the hung fetches fail now instead of at git's timeout


def _session(url: str, org_id: int) -> Session:
    project = Project(org_id=org_id, name="p", slug=f"p-{uuid.uuid4().hex[:6]}", repo_url=url)
    return Session(id=f"ses_prefetch{uuid.uuid4().hex[:12]}", org_id=org_id, project=project)


def test_a_prefetch_never_waits_behind_other_repositories_hung_fetches(alice, allow_private, gitserver):
    silent = Silent()
    try:
        hung = [
            mirror_prefetch(_session(f"http://127.0.0.1:{silent.port}/hung-{i}.git", alice.org.pk))
            for i in range(4)
        ]
        assert all(h is not None for h in hung)
        started = time.monotonic()
        fetch = mirror_prefetch(_session(gitserver.url("public/demo.git"), alice.org.pk))
        mirror = fetch.future.result(timeout=60)
        assert (mirror / "HEAD").exists()
        assert time.monotonic() - started < 30
        assert not any(h.future.done() for h in hung)  # they still hang: the fifth did not wait for them
    finally:
        silent.close()
