"""Two sandbox hosts, an engine worker that reaches neither Docker engine (issue 29, "How it is tested
here"): host A is this machine's engine, host B the second dockerd of deploy/hosts/hostb.sh, each with a
host service (a worker consuming only `host.<name>`, with its engine's socket and its own sandbox root);
the engine worker has HANGAR_SANDBOX_REMOTE=1 and no Docker socket, and reaches every agent over the
channel (B's through the private link's route).

Two sessions of one org are placed one on each host (spread per org); the one on B runs bash and write,
its diff is served and another org gets a 404; then the operator drains B: B's host service hibernates
the idle session, exports its workspace to the archive both hosts reach and releases it, and the next
prompt is placed on A, whose host service imports it: its files are there.
"""

from __future__ import annotations

from io import StringIO

import docker
import pytest
from django.core.management import call_command

from hangar.conversations.models import SandboxHost, Session
from hangar.engine.services import session_prompt
from sandbox import containers
from sandbox.workspace_archive import SETTING as ARCHIVE
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.engine.two_hosts_rig import start_two_hosts
from tests.sandbox.hostb import host_b  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _running_on(client, session_id: str) -> bool:
    found = client.api.containers(filters={"name": containers.session_container_name(session_id)})
    return any(c["State"] == "running" for c in found)


def test_sessions_on_two_hosts_and_a_drained_host_moves_its_session(
    host_b,  # noqa: F811
    alice,
    charlie,
    api,
    script,
    make_session,
    start_worker,
    monkeypatch,
    tmp_path,
    request,
):
    docker_client = docker.from_env()
    hosts = start_two_hosts(
        host_b, start_worker, monkeypatch, tmp_path, "two", shared={ARCHIVE: str(tmp_path / "archive")}
    )
    host_a_name, host_b_name, engine = hosts.a, hosts.b, hosts.engine

    # Two sessions of one org: one on each host (the second placed once the first's host reported it).
    sessions, scripts = [], {}
    for n in (1, 2):
        script_id = script.load(
            [
                [call("bash", f"b{n}", command=f"echo note {n} | tee notes.txt; hostname", description="n")],
                [call("write", f"w{n}", filePath="/workspace/app.py", content=f"print('app {n}')\n")],
                [{"text": f"Done {n}."}],
            ]
        )
        session = make_session(alice, script_id)
        scripts[session.pk] = script_id
        request.addfinalizer(lambda sid=session.pk: host_b.destroy(sid))  # whatever is left of it on B
        session_prompt(actor=alice.actor, session=session, parts=text_prompt("notes and app"))
        session = wait_idle(session, timeout=240)
        assert text_of(session) == f"Done {n}.", [t["state"] for t in tool_parts(session)]
        host = Session.objects.get(pk=session.pk).sandbox_host_id
        wait_for(
            lambda host=host: SandboxHost.objects.get(name=host).org_live.get(str(alice.org.pk)) == 1,
            30,
            what="the host reporting the org's sandbox",
        )
        sessions.append(session)
    placed = {Session.objects.get(pk=s.pk).sandbox_host_id: s for s in sessions}
    assert set(placed) == {host_a_name, host_b_name}, placed
    on_b, on_a = placed[host_b_name], placed[host_a_name]
    assert _running_on(host_b.client, on_b.pk) and not _running_on(docker_client, on_b.pk)
    assert _running_on(docker_client, on_a.pk) and not _running_on(host_b.client, on_a.pk)

    # The session on B: its tools ran there, its diff is served, another org gets a 404.
    tools = tool_parts(on_b)
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("bash", "completed"),
        ("write", "completed"),
    ]
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{on_b.pk}/diff/"
    response = api(alice).get(url)
    assert response.status_code == 200, response.content
    diffs = {d["file"]: d for d in response.json()}
    assert set(diffs) == {"notes.txt", "app.py"} and "+print('app" in diffs["app.py"]["patch"]
    assert api(charlie).get(url).status_code == 404

    # Drain B: its host service hibernates the idle session, exports and releases it; B is drained.
    call_command("sandbox_host", "drain", host_b_name, stdout=StringIO())
    wait_for(lambda: SandboxHost.objects.get(name=host_b_name).state == "drained", 60, what="B drained")
    wait_for(lambda: Session.objects.get(pk=on_b.pk).sandbox_host_id is None, 30, what="the session released")
    assert not _running_on(host_b.client, on_b.pk)

    # Its next prompt lands on A, which imports the workspace: the files written on B are there.
    first_note = tools[0]["state"]["output"].split("\n")[0]
    script.load(
        [
            [call("bash", "again", command="cat notes.txt && python3 app.py", description="again")],
            [{"text": "Moved."}],
        ],
        script_id=scripts[on_b.pk],
    )
    session_prompt(actor=alice.actor, session=on_b, parts=text_prompt("still there?"))
    moved = wait_idle(on_b, timeout=240)
    assert text_of(moved).endswith("Moved."), [t["state"] for t in tool_parts(moved)]
    assert Session.objects.get(pk=on_b.pk).sandbox_host_id == host_a_name
    output = tool_parts(moved)[-1]["state"]["output"].split("\n")
    assert output[0] == first_note and output[1].startswith("app "), output
    assert _running_on(docker_client, on_b.pk) and not _running_on(host_b.client, on_b.pk)

    # The engine worker never tried Docker (it has no socket) nor a host's files.
    engine.log.flush()
    with open(engine.log.name) as f:
        engine_log = f.read()
    for sign in ("nonexistent/docker.sock", "DockerException", "Traceback"):
        assert sign not in engine_log, engine_log[-3000:]
    assert not (tmp_path / "engine-root" / "sessions").exists()
