"""What deploy/up.sh runs when it stops (Ctrl-C): `manage.py sandboxes_hibernate` stops every running
sandbox of this host's sandbox root and keeps its workspace, so the next run resumes it."""

import docker
import pytest
from django.core.management import call_command

from hangar.conversations.services import session_create
from hangar.engine.workspace.sandboxes import sandbox_for
from sandbox import containers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


def test_stopping_up_hibernates_its_running_sandboxes_and_keeps_their_workspaces(
    alice, sessions_made, capsys
):
    session = session_create(actor=alice.actor, project=alice.project, title="t")
    sessions_made.append(session.pk)
    sandbox_for(session).write("kept.txt", "still here\n")
    name = containers.session_container_name(session.pk)
    client = docker.from_env()
    assert client.containers.get(name).status == "running"

    call_command("sandboxes_hibernate")
    assert " stopped (workspaces kept" in capsys.readouterr().out
    assert not client.api.containers(all=True, filters={"name": name})  # hibernated: no container kept

    assert sandbox_for(session).read("kept.txt").content == "still here"
