"""Web requests and sandboxes: a viewer's read of the workspace never starts (or resumes, or prepares) a
sandbox, it reads one that runs; and the web process never starts a warm pool, only a worker does."""

import pytest

from hangar.conversations.models import Session
from hangar.engine.workspace import sandboxes
from sandbox import registry, volumes
from tests.engine.conftest import REPO_QUEUE, wait_for

pytestmark = pytest.mark.timeout(240)


@pytest.mark.django_db(transaction=True)  # the start is sent on commit, to a worker in another process
def test_a_viewer_reading_the_workspace_never_starts_a_sandbox(api, alice, dave, sessions_made, start_worker):
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    response = api(alice).post(base, {"title": "t"}, format="json")
    session = Session.objects.get(pk=response.json()["id"])
    sessions_made.append(session.pk)
    url = base + f"{session.pk}/workspace/"
    for path, query in (("files/", {}), ("file/", {"path": "x.txt"}), ("find/", {"query": "x"})):
        refused = api(dave).get(url + path, query)
        assert refused.status_code == 409, (path, refused.content)
        assert "not running" in refused.json()["error"]["message"]
    assert registry.lookup(volumes.session_key(session.pk)) is None  # nothing was made for it
    assert not sandboxes.manager().is_running(session.pk)
    # A member may have it started, by the repository worker (never in the web process): 409 meanwhile.
    starting = api(alice).get(url + "files/")
    assert starting.status_code == 409 and "starting" in starting.json()["error"]["message"]
    start_worker(queues=[REPO_QUEUE])
    wait_for(lambda: sandboxes.manager().is_running(session.pk), timeout=120, what="the sandbox started")
    assert api(dave).get(url + "files/").status_code == 200  # now it runs: a viewer reads it


@pytest.mark.docker  # the manager it builds opens a Docker client, through no fixture (tests/tiers.py)
def test_the_web_process_never_starts_a_warm_pool(settings, monkeypatch):
    settings.SANDBOX_POOL_SIZE = 1
    monkeypatch.setenv("HANGAR_SANDBOX_POOL", "1")
    monkeypatch.setattr(sandboxes, "_manager", None)
    made = sandboxes.manager()  # in this process, as a web request would
    try:
        assert made.pool is None
    finally:
        if made.pool is not None:
            made.pool.drain()
