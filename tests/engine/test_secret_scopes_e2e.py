"""A scoped secret through the real worker and Docker (issue 28 item 4): the setup script and the commands
its scope names get it in their own env; every try to get it out (echo, a file read back, base64, an error
message, grep, the read tool) finds it masked in what is stored, streamed or sent to the model; and it is
never in the container's env, the sandbox's bound env file, the events or the worker's log."""

import json

import docker
import pytest

from hangar.conversations.models import Event, Part
from hangar.engine.services import session_prompt
from hangar.projects.env_var_services import env_var_set
from hangar.repos.models import SessionWorkspace
from sandbox import containers, registry, volumes
from tests.engine.conftest import text_prompt, tool_parts, wait_idle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

VALUE = "npm_tok-Zq8xW3vK9pLm2Rt7"
SETUP = 'echo "setup sees [$NPM_TOKEN]"; printf %s "$NPM_TOKEN" > .from-setup; echo done'


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def bash(call_id, command):
    return call("bash", call_id, command=command, description=call_id)


def test_a_scoped_secret_reaches_only_its_processes_and_every_way_out_is_masked(
    alice, script, make_session, start_worker
):
    project = alice.project
    project.setup_script = SETUP
    project.save()
    scope = {"setup": True, "commands": ["printenv NPM_TOKEN", "base64", "base64 *"], "mcp": ["registry"]}
    env_var_set(actor=alice.actor, project=project, name="NPM_TOKEN", value=VALUE, scope=scope)
    env_var_set(actor=alice.actor, project=project, name="OTHER_SECRET", value="other-secret-zzz111")
    worker = start_worker()
    script_id = script.load(
        [
            [bash("unscoped", 'echo "token=[$NPM_TOKEN] other=[$OTHER_SECRET]"')],
            [bash("scoped", "printenv NPM_TOKEN")],
            [bash("mixed", "printenv NPM_TOKEN; echo leaked=$NPM_TOKEN")],
            [bash("b64", "printenv NPM_TOKEN | base64")],
            [bash("file", "cat .from-setup; echo; base64 .from-setup")],
            [call("read", "read", filePath="/workspace/.from-setup")],
            [call("grep", "grep", pattern="npm_tok", path="/workspace")],
            [bash("error", 'cat "/nope/$(cat .from-setup)"')],
            [bash("rev", "rev .from-setup | rev")],
            [{"text": "Done."}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("try to leak it"))
    session = wait_idle(session, timeout=240)
    outputs = {t["callID"]: t["state"].get("output") or t["state"].get("error") for t in tool_parts(session)}
    assert [t["state"]["status"] for t in tool_parts(session)] == ["completed"] * 9, outputs

    # Only the processes its scope names got it; the unscoped one got nothing of either secret.
    assert "token=[] other=[]" in outputs["unscoped"]
    assert outputs["scoped"].strip() == "***"
    assert "leaked=\n" in outputs["mixed"] or outputs["mixed"].strip() == "leaked="
    assert outputs["b64"].strip().startswith("***")
    assert outputs["file"].count("***") == 2
    assert "***" in outputs["read"] and "***" in outputs["grep"]
    assert "No such file" in outputs["error"] and "/nope/***" in outputs["error"]
    assert outputs["rev"].strip() == "***"

    # The setup script had it (it wrote the file the commands read back) and its log is masked.
    row = SessionWorkspace.objects.get(session=session)
    assert "setup sees [***]" in row.setup_log

    # Nowhere stored, streamed or sent: parts, events, the model's requests, the worker's log.
    stored = json.dumps([p.data for p in Part.objects.filter(session=session)])
    events = json.dumps([e.payload for e in Event.objects.filter(session=session)])
    requests = json.dumps(script.requests(script_id))
    worker.log.flush()
    with open(worker.log.name) as log:
        logged = log.read()
    for where, text in {"parts": stored, "events": events, "model": requests, "log": logged}.items():
        assert VALUE not in text, where
        assert "other-secret-zzz111" not in text, where
    assert "token=[] other=[]" in requests  # the model did see the outputs, masked

    # Never the container's env, never a file the platform wrote in the sandbox.
    name = containers.session_container_name(session.pk)
    container = docker.from_env().containers.get(name)
    assert not any(VALUE in e for e in container.attrs["Config"]["Env"] or [])
    record = registry.lookup(volumes.session_key(session.pk))
    state = volumes.ensure_mounted(record["volume"]) / "state"
    for path in state.rglob("*.json"):
        assert VALUE not in path.read_text(errors="replace"), path
