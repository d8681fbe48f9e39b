"""What an engine worker without Docker (HANGAR_SANDBOX_REMOTE, hangar.engine.workspace.remote) says when no
host can give it a sandbox: real Postgres and Redis (the broker and the result backend), no host service
running. Each is a SandboxUnavailable (the turn's "sandbox could not be started: ...") naming the host,
within the bound, never a wait without end. The run through a real host service is test_host_queue.py's.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from hangar.conversations.models import HostState, SandboxHost, Session
from hangar.conversations.services import session_create
from hangar.engine.workspace import remote
from hangar.engine.workspace.sealing import Opener, seal
from sandbox.protocol import SandboxUnavailable

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _only_the_tests_hosts():
    """Only the hosts each test makes: a worker with Docker of an earlier test in this process committed
    its host's heartbeat row, and a test that does not flush the database (this module's) still sees it;
    placement would then send the request to that host's queue, which no one consumes any more."""
    SandboxHost.objects.all().delete()  # inside the test's transaction: rolled back after it


def _host(name: str, state: str = HostState.ACTIVE, **fields) -> SandboxHost:
    defaults = {"free_memory_mb": 64_000, "free_disk_mb": 500_000, "state": state}
    return SandboxHost.objects.create(name=name, **(defaults | fields))


def _session(persona) -> Session:
    return session_create(actor=persona.actor, project=persona.project, model={})


def test_no_registered_host_is_said_at_once(alice):
    with pytest.raises(SandboxUnavailable, match="no sandbox host is registered"):
        remote.remote_sandbox(_session(alice))


@pytest.fixture
def ghost_queue(settings):
    """The request left in the ghost's queue (it expires unread; removed here all the same)."""
    yield "host.ghost"
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete("host.ghost")


def test_a_host_whose_service_does_not_answer_fails_within_the_bound(alice, settings, ghost_queue):
    settings.HANGAR_HOST_TASK_TIMEOUT_S = 1.5
    _host("ghost")
    _host("full", free_memory_mb=10)  # no room: placement picks the ghost, the only host that fits
    started = time.monotonic()
    with pytest.raises(SandboxUnavailable, match=r"sandbox host ghost did not answer within 1.5 s"):
        remote.remote_sandbox(_session(alice))
    assert time.monotonic() - started < 5


def test_placement_refusals_name_each_host(alice):
    _host("draining", state=HostState.DRAINING)
    _host("small", free_disk_mb=1)
    with pytest.raises(SandboxUnavailable) as refused:
        remote.remote_sandbox(_session(alice))
    message = str(refused.value)
    assert "draining is draining" in message and "small has 1 MB of disk free" in message


def test_a_workspace_on_a_lost_host_is_not_waited_for(alice, settings):
    settings.HANGAR_HOST_TASK_TIMEOUT_S = 60
    _host("gone", state=HostState.LOST)
    session = _session(alice)
    Session.objects.filter(pk=session.pk).update(sandbox_host_id="gone")
    started = time.monotonic()
    with pytest.raises(
        SandboxUnavailable, match="sandbox host gone, which holds this session's workspace, is lost"
    ):
        remote.remote_sandbox(session)
    assert time.monotonic() - started < 2


def test_the_channel_secret_is_sealed_to_the_asking_process_and_session():
    secret = bytes(range(32))
    mine, theirs = Opener(), Opener()
    sealed = seal(secret, mine.public_hex, "ses_a")
    assert secret.hex() not in repr(sealed) and secret.hex().upper() not in repr(sealed).upper()
    assert mine.open(sealed, "ses_a") == secret
    with pytest.raises(SandboxUnavailable):
        theirs.open(sealed, "ses_a")  # another worker process's key
    with pytest.raises(SandboxUnavailable):
        mine.open(sealed, "ses_b")  # passed off as another session's


def test_a_result_backend_that_cannot_be_reached_is_a_clear_error(alice):
    """Redis (the result backend) refusing connections: a SandboxUnavailable naming the host, not a crash
    of the run. Celery keeps a backend per thread, so a thread of its own sees the unreachable URL."""
    from hangar.celery import app

    _host("reachable")
    session = _session(alice)
    before = app.conf.result_backend
    app.conf.result_backend = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    raised: list[BaseException] = []

    def acquire():
        try:
            remote.call_host("reachable", "hangar.host.sandbox_acquire", [session.pk, "00" * 32], timeout=5)
        except BaseException as exc:
            raised.append(exc)

    try:
        worker = threading.Thread(target=acquire)
        worker.start()
        worker.join(60)
    finally:
        app.conf.result_backend = before
        redis.Redis.from_url(app.conf.broker_url).delete("host.reachable")
    assert len(raised) == 1 and isinstance(raised[0], SandboxUnavailable), raised
    assert "sandbox host reachable could not be asked" in str(raised[0])
