"""The host registry with real workers, Docker and the scripted model: a worker registers its host and
heart-beats; a host whose worker stops answering is marked lost by beat's sweep and the session busy on
it ends its turn with "sandbox host lost" within the bound, and runs again when prompted; draining a host
lets a busy run finish, then hibernates its sandbox and refuses new sessions; activating it takes them again."""

import os
import signal
import time
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, SandboxHost, Session
from hangar.engine.services import session_prompt
from hangar.engine.tasks import sandbox_hosts_sweep
from hangar.engine.workspace.sandboxes import manager
from sandbox import host_stats
from tests.engine.conftest import assistant_messages, text_of, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

LOST_AFTER_S = 3.0


def bash(call_id, command):
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}
        ]
    }


@pytest.fixture
def host(start_worker, settings):
    """A worker serving a host of its own name, heart-beating every second."""
    name = f"test-host-{uuid.uuid4().hex[:6]}"
    settings.HANGAR_HOST_LOST_AFTER_S = LOST_AFTER_S
    worker = start_worker(
        env={
            "HANGAR_SANDBOX_HOST": name,
            "HANGAR_HOST_HEARTBEAT_S": "1",
            "HANGAR_SANDBOX_HOST_LABELS": "ssd,eu",
        }
    )
    wait_for(lambda: SandboxHost.objects.filter(name=name).exists(), 90, what="the worker's host registered")
    return name, worker


def _live() -> list[str]:
    return host_stats.live_sandboxes(manager().api)[0]


def test_a_worker_registers_its_host_and_heart_beats(host):
    name, _ = host
    row = SandboxHost.objects.get(name=name)
    assert row.state == "active" and row.labels == ["ssd", "eu"]
    assert row.cpus >= 1 and row.memory_mb > row.free_memory_mb > 0 and row.disk_mb > row.free_disk_mb > 0
    first = row.heartbeat_at
    wait_for(lambda: SandboxHost.objects.get(name=name).heartbeat_at > first, 10, what="a second heartbeat")


def test_a_session_busy_on_a_lost_host_ends_its_turn_and_runs_again(host, alice, script, make_session):
    name, worker = host
    script_id = script.load([[bash("c1", "sleep 120")], [{"text": "back again"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("long"))
    wait_for(
        lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), 120, what="bash running"
    )
    assert Session.objects.get(pk=session.pk).sandbox_host_id == name
    wait_for(lambda: SandboxHost.objects.get(name=name).live_sandboxes >= 1, 5, what="its sandbox reported")

    os.kill(worker.proc.pid, signal.SIGSTOP)  # the host stops answering: no heartbeat, no lease renewal
    stopped = time.monotonic()
    try:

        def ended():
            sandbox_hosts_sweep()  # what beat runs every 5 s
            return Session.objects.filter(pk=session.pk, status="idle", lease_owner="").exists()

        wait_for(ended, LOST_AFTER_S + 10, every=0.5, what="the busy session ended")
        took = time.monotonic() - stopped
        assert took < LOST_AFTER_S + 3, f"ended {took:.1f} s after the host went silent"
        assert SandboxHost.objects.get(name=name).state == "lost"
        assert AuditEvent.objects.filter(action="sandbox_host.lost", target_id=name).exists()
    finally:
        os.kill(worker.proc.pid, signal.SIGCONT)

    (error,) = [e.payload["error"] for e in Event.objects.filter(session=session, type="session.error")]
    assert error["name"] == "SandboxHostLostError"
    assert error["data"]["message"].startswith(
        f"sandbox host lost: the machine holding this session's sandbox ({name})"
    )
    last = assistant_messages(session)[-1]
    assert last["error"]["name"] == "UnknownError" and "sandbox host lost" in last["error"]["data"]["message"]
    assert last["time"].get("completed")
    assert [p["state"]["status"] for p in tool_parts(session)] == ["error"]
    assert AuditEvent.objects.filter(action="session.finished", data__outcome="host_lost").count() == 1

    # The worker answers again: its host is active again, and the session runs when prompted.
    wait_for(lambda: SandboxHost.objects.get(name=name).state == "active", 30, what="the host back")
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("again"))
    done = wait_idle(session)
    assert text_of(done).endswith("back again")
    assert Event.objects.filter(session=session, type="session.error").count() == 1


def test_drain_lets_a_busy_run_finish_hibernates_its_sandbox_and_refuses_new_sessions(
    host, alice, script, make_session
):
    name, _ = host
    session = make_session(alice, script.load([[bash("c1", "sleep 5; echo slept")], [{"text": "first"}]]))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"))
    wait_for(
        lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), 120, what="bash running"
    )

    call_command("sandbox_host", "drain", name, stdout=StringIO())
    # Two heartbeats of the draining host (each a new heartbeat_at after the one first seen): the busy run
    # is left alone through them.
    beats: list = []

    def two_more_beats() -> bool:
        at = SandboxHost.objects.get(name=name).heartbeat_at
        if not beats or at != beats[-1]:
            beats.append(at)
        return len(beats) >= 3

    wait_for(two_more_beats, 30, what="two heartbeats of the draining host")
    assert SandboxHost.objects.get(name=name).state == "draining"
    assert session.pk in _live()
    assert text_of(wait_idle(session)) == "first"  # it finished its turn
    assert "slept" in tool_parts(session)[0]["state"]["output"]

    wait_for(lambda: session.pk not in _live(), 60, what="the now idle sandbox hibernated")
    wait_for(lambda: SandboxHost.objects.get(name=name).state == "drained", 30, what="the host drained")

    newcomer = make_session(alice, script.load([[{"text": "placed"}]]))
    session_prompt(actor=alice.actor, session=newcomer, parts=text_prompt("hello"))
    wait_idle(newcomer)
    (error,) = [e.payload["error"] for e in Event.objects.filter(session=newcomer, type="session.error")]
    message = error["data"]["message"]
    assert "no sandbox host can take this session" in message and f"{name} is drained" in message, message
    assert Session.objects.get(pk=newcomer.pk).sandbox_host_id is None

    call_command("sandbox_host", "activate", name, stdout=StringIO())
    session_prompt(actor=alice.actor, session=newcomer, parts=text_prompt("hello again"))
    assert text_of(wait_idle(newcomer)) == "placed"
    assert Session.objects.get(pk=newcomer.pk).sandbox_host_id == name
