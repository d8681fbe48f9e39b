"""Host loss on two hosts (issue 29, "How it is tested here"): a session busy on host B (the second dockerd of
deploy/hosts/hostb.sh) mid-step when B's host service and B's dockerd are killed with SIGKILL. Beat's sweep
(driven here) marks B lost and ends the turn within the bound, with "sandbox host lost", never stuck busy;
the session's events stay dense (no duplicate, no gap in seq). Its next prompt runs on host A from its last
durable checkpoint: the copy B's periodic checkpoint sweep (driven here: one host task) made of the busy
workspace mid-step, which replaced the export a drain of B made earlier (kept in the archive after B
imported it back). So the files of the export and of the checkpoint are there and what was written on B
after it is gone; the session is told, with the checkpoint's time (`session.notice`). Another org still
gets a 404 for the session.

Placement is steered with the operator's drain: A is drained while the session is placed on B, and made
active again once B is lost. B is brought back up afterwards (`hostb.sh up` is idempotent): other tests
share it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import time
from io import StringIO
from pathlib import Path

import docker.errors
import pytest
from django.core.management import call_command

from hangar.conversations.models import Event, SandboxHost, Session
from hangar.engine.services import session_prompt
from hangar.engine.tasks import sandbox_hosts_sweep
from hangar.engine.workspace.host_names import CHECKPOINT
from hangar.engine.workspace.remote import call_host
from sandbox import containers
from sandbox.workspace_archive import SETTING as ARCHIVE
from sandbox.workspace_archive import checkpoint_paths, exported
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.engine.two_hosts_rig import start_two_hosts
from tests.sandbox.hostb import SCRIPT, host_b  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)

LOST_AFTER_S = 4.0
DOCKERD_PID = Path("/run/hangar-hostb/docker.pid")  # hostb.sh's


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _operator(action: str, host: str) -> None:
    call_command("sandbox_host", action, host, stdout=StringIO())


def _in_b(host_b, session_id: str, command: str) -> int:  # noqa: F811
    """Run `command` in the session's container on B (beside the step); its exit code, -1 with no container
    or one not running (created and not started yet: the session's cold start on B)."""
    try:
        box = host_b.client.containers.get(containers.session_container_name(session_id))
        return box.exec_run(["sh", "-c", command]).exit_code
    except docker.errors.NotFound:
        return -1
    except docker.errors.APIError as exc:
        if exc.status_code == 409:  # "is not running"
            return -1
        raise


def _seqs(session_id: str) -> list[int]:
    return list(Event.objects.filter(session_id=session_id).order_by("seq").values_list("seq", flat=True))


def test_a_lost_host_ends_the_turn_and_the_session_resumes_on_the_other_from_its_export(
    host_b,  # noqa: F811
    alice,
    charlie,
    api,
    script,
    make_session,
    start_worker,
    monkeypatch,
    settings,
    tmp_path,
    request,
):
    settings.HANGAR_HOST_LOST_AFTER_S = LOST_AFTER_S
    archive = str(tmp_path / "archive")
    hosts = start_two_hosts(host_b, start_worker, monkeypatch, tmp_path, "loss", shared={ARCHIVE: archive})
    a_name, b_name, b_service = hosts.a, hosts.b, hosts.b_service
    monkeypatch.setenv(ARCHIVE, archive)  # this process reads the archive too
    _operator("drain", a_name)  # the session is placed on B

    script_id = script.load(
        [
            [call("bash", "c1", command="echo checkpoint > notes.txt", description="note")],
            [{"text": "Noted."}],
        ]
    )
    session = make_session(alice, script_id)
    sid = session.pk
    request.addfinalizer(lambda: host_b.destroy(sid))  # whatever is left of it on B (after B is up)
    request.addfinalizer(
        lambda: subprocess.run([str(SCRIPT), "up"], capture_output=True, timeout=600, check=True)
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("note it"))
    assert text_of(wait_idle(session, timeout=240)) == "Noted."
    assert Session.objects.get(pk=sid).sandbox_host_id == b_name

    # The checkpoint: draining B exports the idle session's workspace; B back, A still drained, the next
    # prompt lands on B again, which imports it (the archive keeps it as the checkpoint).
    _operator("drain", b_name)
    wait_for(lambda: Session.objects.get(pk=sid).sandbox_host_id is None, 60, what="the session exported")
    assert exported(sid)
    _operator("activate", b_name)
    # A long step: it writes, waits for the test's go (a file in its /tmp, outside the workspace), writes
    # again and sleeps on.
    long = "echo periodic > periodic.txt; until [ -e /tmp/go ]; do sleep 0.2; done; echo lost > after.txt; sleep 120"
    script.load(
        [[call("bash", "c2", command=long, description="long")], [{"text": "never"}]],
        script_id=script_id,
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("a long one"))
    wait_for(lambda: _in_b(host_b, sid, "test -e /workspace/periodic.txt") == 0, 120, what="the step wrote")
    assert Session.objects.get(pk=sid).sandbox_host_id == b_name and not exported(sid)

    # B's periodic sweep, driven: the busy workspace is copied as the session's checkpoint, replacing the
    # imported export, while the step runs on.
    def checkpointed() -> bool:  # a copy the sandbox wrote during is thrown away: the next sweep retries
        report = call_host(b_name, CHECKPOINT, [], timeout=60)
        assert not report["skipped"] and not report["failed"], report
        return report["made"] == [sid]

    wait_for(checkpointed, 60, every=1, what="B's sweep checkpointed the busy workspace")
    mark = json.loads(checkpoint_paths(sid)[1].read_text())
    assert mark["checkpoint"] is True
    assert [t["state"]["status"] for t in tool_parts(session)] == ["completed", "running"]
    assert _in_b(host_b, sid, "touch /tmp/go") == 0
    wait_for(lambda: _in_b(host_b, sid, "test -e /workspace/after.txt") == 0, 30, what="the later write")

    # Host B dies mid-step: its host service and its Docker engine, SIGKILL.
    b_service.kill(signal.SIGKILL)
    os.kill(int(DOCKERD_PID.read_text().strip()), signal.SIGKILL)
    killed = time.monotonic()

    def ended() -> bool:
        sandbox_hosts_sweep()  # what beat runs every 5 s
        return Session.objects.filter(pk=sid, status="idle", lease_owner="").exists()

    wait_for(ended, LOST_AFTER_S + 15, every=0.5, what="the busy session ended")
    took = time.monotonic() - killed
    assert took < LOST_AFTER_S + 4, f"ended {took:.1f} s after host B died"
    assert SandboxHost.objects.get(name=b_name).state == "lost"
    (error,) = [e.payload["error"] for e in Event.objects.filter(session_id=sid, type="session.error")]
    assert error["name"] == "SandboxHostLostError" and "sandbox host lost" in error["data"]["message"]
    assert [t["state"]["status"] for t in tool_parts(session)] == ["completed", "error"]
    seqs = _seqs(sid)
    assert seqs == list(range(1, len(seqs) + 1)), "the events have no gap and no duplicate"

    # The next prompt runs on A from the checkpoint: the export's file is there, what B had after it is not.
    _operator("activate", a_name)
    script.load(
        [
            [
                call(
                    "bash",
                    "c3",
                    command="cat notes.txt periodic.txt; ls after.txt || echo gone",
                    description="look",
                )
            ],
            [{"text": "Resumed."}],
        ],
        script_id=script_id,
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("still there?"))
    resumed = wait_idle(session, timeout=240)
    assert text_of(resumed).endswith("Resumed."), [t["state"] for t in tool_parts(resumed)]
    assert Session.objects.get(pk=sid).sandbox_host_id == a_name
    output = tool_parts(resumed)[-1]["state"]["output"]
    assert output.splitlines()[:2] == ["checkpoint", "periodic"] and output.rstrip().endswith("gone"), output
    (notice,) = [e.payload for e in Event.objects.filter(session_id=sid, type="session.notice")]
    at = dt.datetime.fromtimestamp(mark["exported_at"], tz=dt.UTC)
    assert notice["host"] == b_name and notice["message"].startswith(
        f"sandbox host {b_name} was lost; resumed on {a_name} from its workspace as checkpointed at "
        f"{at:%Y-%m-%d %H:%M:%S} UTC"
    ), notice
    assert notice["message"].endswith("changes since then are lost")
    assert Event.objects.filter(session_id=sid, type="session.error").count() == 1
    seqs = _seqs(sid)
    assert seqs == list(range(1, len(seqs) + 1)), "the events have no gap and no duplicate"

    # Another org still cannot read the session.
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{sid}/"
    assert api(alice).get(url).status_code == 200
    assert api(charlie).get(url).status_code == 404
