"""An engine worker that holds no Docker socket drives a session whose sandbox a host service made (issue 29,
docs/scale-out.md "The seam: three roles"): real parts, two Celery workers.

- the host service `h1`: a worker consuming only `host.h1`, with the Docker socket, this run's sandbox root
  and the TCP agent channel; it registers h1 in the host registry;
- the engine worker: the engine's queues, HANGAR_SANDBOX_REMOTE=1, DOCKER_HOST pointing at no socket and a
  sandbox root of its own (empty): whatever it did with Docker or the host's files would fail.

A prompt runs bash then write in the sandbox on h1 (placed there by the engine, acquired through h1's
queue, every tool call over the channel), the session's diff is served, another org still gets a 404;
the sandbox is hibernated and destroyed through h1's queue, and a prompt after the hibernate finds its
files (h1 resumed it when the engine asked again).
"""

from __future__ import annotations

import json

import docker
import docker.errors
import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.host_selectors import host_named
from hangar.conversations.models import Session
from hangar.engine.services import session_prompt
from hangar.engine.workspace import sandboxes
from hangar.engine.workspace.host_names import host_queue
from hangar.engine.workspace.remote import remote_destroy, remote_hibernate
from hangar.projects.env_var_services import env_var_set
from hangar.projects.models import Project
from hangar.projects.services import project_update
from sandbox import channel, containers, registry, volumes
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

HOST = "h1"
# Through the egress proxy to an address the allowlist does not name: the proxy's 403.
FETCH = (
    'python3 -c "import urllib.request, urllib.error\n'
    "try: urllib.request.urlopen('http://1.1.1.1/', timeout=10); print('FETCH ok')\n"
    "except urllib.error.HTTPError as e: print('FETCH', e.code)\n"
    "except OSError as e: print('FETCH err', e)\""
)
NO_DOCKER = "unix:///nonexistent/docker.sock"


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _container(session_id: str) -> dict | None:
    try:
        return docker.from_env().api.inspect_container(containers.session_container_name(session_id))
    except docker.errors.NotFound:
        return None


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


@pytest.fixture
def remote_engine(start_worker, monkeypatch, tmp_path):
    """The host service h1 and an engine worker without Docker; h1 registered. Yields the engine worker."""
    monkeypatch.setenv(channel.SETTING, "tcp")
    host_service = start_worker(
        env={channel.SETTING: "tcp", "HANGAR_SANDBOX_HOST": HOST, "HANGAR_SANDBOX_POOL": "0"},
        queues=[host_queue(HOST)],
        concurrency=4,
    )
    engine = start_worker(
        env={
            channel.SETTING: "tcp",
            "HANGAR_SANDBOX_REMOTE": "1",
            "DOCKER_HOST": NO_DOCKER,
            "HANGAR_SANDBOX_ROOT": str(tmp_path / "engine-root"),
            "HANGAR_SANDBOX_HOST": "engine-no-docker",
        }
    )
    wait_for(lambda: host_named(HOST), 120, what="the host service registering h1")
    engine.host_service = host_service  # for a test that reads its log
    return engine


def _engine_log(engine) -> str:
    engine.log.flush()
    with open(engine.log.name) as f:
        return f.read()


def _warmed_up(worker) -> dict:
    """What the worker's start loaded before it took tasks (hangar.engine.tasks.warm_up_worker)."""
    lines = [line for line in _engine_log(worker).splitlines() if '"worker_warmed_up"' in line]
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def _no_docker():
    raise AssertionError("this process was to reach no Docker engine")


def test_an_engine_worker_without_docker_runs_a_session_on_a_host(
    alice, charlie, api, script, make_session, remote_engine, tmp_path, settings, monkeypatch
):
    engine, engine_root = remote_engine, tmp_path / "engine-root"
    script_id = script.load(
        [
            [call("bash", "c1", command="echo hello from h1 | tee notes.txt", description="notes")],
            [call("write", "c2", filePath="/workspace/app.py", content="print('remote')\n")],
            [{"text": "Wrote them."}],
        ],
        title="Through the host queue",
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("take notes, write app.py"))
    session = wait_idle(session, timeout=180)

    tools = tool_parts(session)
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("bash", "completed"),
        ("write", "completed"),
    ]
    assert tools[0]["state"]["output"].strip() == "hello from h1"
    assert text_of(session).endswith("Wrote them.")
    # Placed on h1 (the only host: the engine worker registered none), and its workspace is there.
    assert Session.objects.get(pk=session.pk).sandbox_host_id == HOST
    assert host_named("engine-no-docker") is None
    info = _container(session.pk)
    assert info is not None and info["State"]["Running"]
    assert registry.channel_endpoint(volumes.session_key(session.pk))[:2] == channel.endpoint_of(info)

    # The run's diff, served from what the engine stored; another org cannot see it.
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{session.pk}/diff/"
    response = api(alice).get(url)
    assert response.status_code == 200, response.content
    diffs = {d["file"]: d for d in response.json()}
    assert set(diffs) == {"notes.txt", "app.py"}
    assert "+print('remote')" in diffs["app.py"]["patch"] and diffs["app.py"]["status"] == "added"
    assert api(charlie).get(url).status_code == 404
    theirs = f"/api/orgs/{charlie.org.slug}/projects/{charlie.project.pk}/sessions/{session.pk}/diff/"
    assert api(charlie).get(theirs).status_code == 404

    # A web process without Docker reads the running sandbox's files: h1 says where its agent answers
    # (hangar.host.sandbox_locate), the read goes over the channel; this process's Docker is never asked.
    settings.HANGAR_SANDBOX_REMOTE = True
    monkeypatch.setattr(sandboxes, "manager", _no_docker)
    file_url = url.replace("/diff/", "/workspace/file/")
    response = api(alice).get(file_url, {"path": "app.py"})
    assert response.status_code == 200, response.content
    assert response.json()["content"] == "print('remote')\n"
    assert api(charlie).get(file_url, {"path": "app.py"}).status_code == 404

    # The engine worker ran with no Docker socket and no host files: it never tried either.
    environ = _environ(engine.proc.pid)
    assert environ["DOCKER_HOST"] == NO_DOCKER and environ["HANGAR_SANDBOX_REMOTE"] == "1"
    assert not (engine_root / "sessions").exists() and not (engine_root / "channel").exists()
    engine_log = _engine_log(engine)
    for sign in ("nonexistent/docker.sock", "DockerException", "Traceback"):
        assert sign not in engine_log, engine_log[-3000:]
    # The host service calls no model: its start loaded neither LiteLLM nor the loop; the engine's loaded
    # the loop, and not LiteLLM either: its calls go to an OpenAI-compatible endpoint directly.
    host_start, engine_start = _warmed_up(engine.host_service), _warmed_up(engine)
    assert host_start["runs_the_loop"] is False and host_start["litellm_loaded"] is False
    assert engine_start["runs_the_loop"] is True and engine_start["litellm_loaded"] is False

    # Hibernated through h1's queue; the next prompt asks h1 again, which resumes it with its files.
    remote_hibernate(session.pk)
    hibernated = _container(session.pk)
    assert hibernated is None or not hibernated["State"]["Running"]
    assert registry.lookup(volumes.session_key(session.pk)) is not None  # its workspace is kept
    # The web starts nothing: 409, and the engine worker is asked to (prepare_workspace: through h1).
    response = api(alice).get(file_url, {"path": "notes.txt"})
    assert response.status_code == 409, response.content
    resumed = wait_for(
        lambda: (r := api(alice).get(file_url, {"path": "notes.txt"})).status_code == 200 and r,
        120,
        what="the sandbox resumed on h1 for the web's read",
    )
    assert resumed.json()["content"] == "hello from h1\n"
    script.load(
        [
            [call("read", "c3", filePath="/workspace/app.py")],
            [call("bash", "c4", command="python3 app.py && cat notes.txt", description="run")],
            [{"text": "Still there."}],
        ],
        script_id=script_id,
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("is it still there?"))
    session = wait_idle(session, timeout=180)
    tools = tool_parts(session)[2:]
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("read", "completed"),
        ("bash", "completed"),
    ]
    assert "print('remote')" in tools[0]["state"]["output"]
    assert tools[1]["state"]["output"].split() == ["remote", "hello", "from", "h1"]
    assert _container(session.pk)["State"]["Running"]

    remote_destroy(session.pk)
    assert _container(session.pk) is None
    assert registry.lookup(volumes.session_key(session.pk)) is None


def bash(call_id, command):
    return call("bash", call_id, command=command, description="probe")["tool_calls"][0]


def running(session, call_id):
    return any(p["callID"] == call_id and p["state"]["status"] == "running" for p in tool_parts(session))


def test_a_policy_changed_mid_run_reaches_the_sandbox_through_its_host(
    alice, script, make_session, remote_engine
):
    """hangar.engine.turn.live_policy with a remote worker: the host applies the new spec (an env var
    re-bound in place mid-step; a new network mode by recreating the container on its workspace, whose
    agent then answers elsewhere: the worker's connection moves to it)."""
    env_var_set(actor=alice.actor, project=alice.project, name="FOO", value="before", secret=False)
    script_id = script.load(
        [
            [
                {
                    "tool_calls": [
                        bash("c1", "echo kept > marker.txt; echo FOO=$FOO; sleep 4"),
                        bash("c2", "echo FOO=$FOO"),
                    ]
                }
            ],
            [{"tool_calls": [bash("c3", "echo PROXY=$HTTP_PROXY; sleep 4")]}],
            [{"tool_calls": [bash("c4", f"echo PROXY=$HTTP_PROXY; cat marker.txt; {FETCH}")]}],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("policies"))
    wait_for(lambda: running(session, "c1"), 180, what="the first command running")
    env_var_set(actor=alice.actor, project=alice.project, name="FOO", value="after", secret=False)
    wait_for(lambda: running(session, "c3"), 120, what="the third command running")
    project_update(
        actor=alice.actor,
        project=Project.objects.get(pk=alice.project.pk),
        network_policy="allowlist",
        network_allowlist=["pypi.example.test"],
    )
    session = wait_idle(session, timeout=180)

    seen = {p["callID"]: p["state"].get("output", "") for p in tool_parts(session)}
    assert "FOO=before" in seen["c1"] and "FOO=after" in seen["c2"], seen
    assert "PROXY=\n" in seen["c3"] + "\n", seen["c3"]  # network "none": no proxy
    assert "PROXY=http://egress:3128" in seen["c4"] and "kept" in seen["c4"], seen["c4"]
    assert "FETCH 403" in seen["c4"], seen["c4"]
    # What the proxy on h1 refused is audited after the run: asked of h1 (a fourth host task, not an
    # acquisition).
    rows = AuditEvent.objects.filter(action="egress.blocked", target_id=session.pk)
    blocked = wait_for(rows.first, timeout=30, what="the egress.blocked audit row")
    assert blocked.data["targets"] == ["GET 1.1.1.1:80"] and rows.count() == 1
    info = _container(session.pk)
    assert info["Config"]["Labels"].get("hangar.session_key") == volumes.session_key(session.pk)
    log = _engine_log(remote_engine)
    assert "Traceback" not in log, log[-3000:]
    # The run's first tool call, then one per policy change: the recreated container's new endpoint came
    # with the second refresh, so no call found its connection dead and acquired again.
    assert log.count('"sandbox_acquired_remote"') == 3, log[-3000:]
