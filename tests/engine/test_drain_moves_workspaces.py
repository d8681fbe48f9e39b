"""Drain moves idle workspaces between hosts (docs/scale-out.md, "Drain"): host B (deploy/hosts/hostb.sh's
second engine, this process acting as its host service) holds a session's sandbox; the operator drains B;
B's drain pass hibernates it, exports its workspace to the archive (HANGAR_WORKSPACE_ARCHIVE) and releases
the session; the session's next use is placed on host A (this machine's engine), which imports the
workspace and resumes it there, files and snapshots intact.
"""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from hangar.conversations.models import SandboxHost, Session
from hangar.engine.workspace.host_service import beat_once
from hangar.engine.workspace.sandboxes import docker_sandbox
from sandbox import containers, registry, volumes
from sandbox.manager import DockerSandboxes
from sandbox.workspace_archive import SETTING, exported
from tests.sandbox.conftest import TEST_LABEL
from tests.sandbox.hostb import host_b  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_draining_b_moves_its_idle_session_to_a(
    host_b,  # noqa: F811
    alice,
    make_session,
    script,
    settings,
    monkeypatch,
    tmp_path,
):
    monkeypatch.setenv(SETTING, str(tmp_path / "archive"))
    monkeypatch.setenv("HANGAR_AGENT_TRANSPORT", "tcp")
    session = make_session(alice, script.load([[{"text": "unused"}]]))
    b_name, a_name = f"test-hostb-{uuid.uuid4().hex[:6]}", f"test-hosta-{uuid.uuid4().hex[:6]}"
    on_b = host_b.sandboxes(TEST_LABEL)

    with host_b.active():
        settings.HANGAR_SANDBOX_HOST = b_name
        box = docker_sandbox(session, on_b)
        assert Session.objects.get(pk=session.pk).sandbox_host_id == b_name
        assert on_b.api.inspect_container(containers.session_container_name(session.pk))["State"]["Running"]
        first = box.snapshot_track()
        box.write("/workspace/plan.md", "1. drain b\n2. resume on a\n")
        second = box.snapshot_track()
        volume_on_b = registry.lookup(volumes.session_key(session.pk))["volume"]

        call_command("sandbox_host", "drain", b_name, stdout=StringIO())
        assert beat_once(on_b) == "draining"  # this beat's drain pass hibernates, exports, releases
        assert SandboxHost.objects.get(name=b_name).state == "drained"
        assert registry.lookup(volumes.session_key(session.pk)) is None
        assert volume_on_b not in volumes.list_volumes()
    assert Session.objects.get(pk=session.pk).sandbox_host_id is None
    assert exported(session.pk)

    settings.HANGAR_SANDBOX_HOST = a_name
    on_a = DockerSandboxes(extra_labels=TEST_LABEL)
    session.refresh_from_db()
    resumed = docker_sandbox(session, on_a)  # placed on A (B is drained), imported there
    assert Session.objects.get(pk=session.pk).sandbox_host_id == a_name
    assert not exported(session.pk)
    assert resumed.read("/workspace/plan.md").content.splitlines()[-1].endswith("2. resume on a")
    assert resumed.snapshot_track() == second
    [diff] = resumed.snapshot_diff(first, second)
    assert (diff.path, diff.status) == ("plan.md", "added")
    assert on_a.api.inspect_container(containers.session_container_name(session.pk))["State"]["Running"]
