"""M11: a policy changed while a session runs reaches its next tool call, in the same step or the next:
sandbox env vars, resource limits, network mode and allowlist (the live container is changed, or
recreated on its workspace where Docker cannot change it), and the org's permission policy. Real worker,
real sandbox; each policy is changed through its service while a command of the session is running."""

import pytest

from hangar.accounts.org_policy_services import org_permission_policy_set
from hangar.audit.models import AuditEvent
from hangar.engine.services import session_prompt
from hangar.projects.env_var_services import env_var_set
from hangar.projects.models import Project
from hangar.projects.services import project_update
from tests.engine.conftest import text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

PROBE = (
    "echo FOO=$FOO; echo PROXY=$HTTP_PROXY; cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max"
    " 2>/dev/null; cat marker.txt 2>/dev/null"
)
# Through the egress proxy: 403 for an address not on the allowlist; listed, the proxy tries to connect
# (no route out of this machine: an error or a timeout, never the proxy's 403).
FETCH = (
    'python3 -c "import urllib.request, urllib.error\n'
    "try: urllib.request.urlopen('http://1.1.1.1/', timeout=10); print('FETCH ok')\n"
    "except urllib.error.HTTPError as e: print('FETCH', e.code)\n"
    "except OSError as e: print('FETCH err', e)\""
)


@pytest.fixture(autouse=True)
def probes_may_read_sys(alice):
    """PROBE reads the cgroup's limits under /sys: outside the workspace, which bash asks about
    (`external_directory`) unless the project allows it. No one is there to answer an ask here."""
    Project.objects.filter(pk=alice.project.pk).update(
        permission_rules=[{"permission": "external_directory", "pattern": "/sys/*", "action": "allow"}]
    )


def bash(call_id, command):
    return {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "probe"}}


def step(*calls):
    return [{"tool_calls": list(calls)}]


def outputs(session) -> dict[str, str]:
    return {p["callID"]: p["state"].get("output") or p["state"].get("error", "") for p in tool_parts(session)}


def running(session, call_id):
    return any(p["callID"] == call_id and p["state"]["status"] == "running" for p in tool_parts(session))


def test_env_and_limits_changed_mid_step_reach_the_next_call_of_the_same_step(
    alice, script, make_session, worker
):
    env_var_set(actor=alice.actor, project=alice.project, name="FOO", value="before", secret=False)
    script_id = script.load(
        [step(bash("c1", "echo marked > marker.txt; sleep 4"), bash("c2", PROBE)), [{"text": "done"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("probe"))
    wait_for(lambda: running(session, "c1"), what="the first command running")

    env_var_set(actor=alice.actor, project=alice.project, name="FOO", value="after", secret=False)
    project_update(actor=alice.actor, project=Project.objects.get(pk=alice.project.pk), sandbox_pids=123)
    wait_idle(session)

    probe = outputs(session)["c2"]
    assert "FOO=after" in probe and "123" in probe, probe


def test_network_mode_then_allowlist_changes_reach_the_next_step_on_the_same_workspace(
    alice, script, make_session, worker
):
    script_id = script.load(
        [
            step(bash("c1", "echo kept > marker.txt; echo PROXY=$HTTP_PROXY; sleep 3")),
            step(bash("c2", f"{PROBE}; {FETCH}; sleep 3")),
            step(bash("c3", FETCH)),
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("network"))
    wait_for(lambda: running(session, "c1"), what="the first command running")
    project_update(
        actor=alice.actor,
        project=Project.objects.get(pk=alice.project.pk),
        network_policy="allowlist",
        network_allowlist=["pypi.example.test"],
    )
    wait_for(lambda: running(session, "c2"), timeout=120, what="the second command running")
    project_update(
        actor=alice.actor,
        project=Project.objects.get(pk=alice.project.pk),
        network_allowlist=["pypi.example.test", "1.1.1.1:80"],
    )
    wait_idle(session, timeout=120)

    seen = outputs(session)
    assert "PROXY=\n" in seen["c1"] + "\n"  # network "none": no proxy
    # Recreated on the new network, on the same workspace; the unlisted name is refused by the proxy.
    assert "PROXY=http://egress:3128" in seen["c2"] and "kept" in seen["c2"], seen["c2"]
    assert "FETCH 403" in seen["c2"], seen["c2"]
    assert "FETCH 403" not in seen["c3"] and "FETCH" in seen["c3"], seen["c3"]  # listed now: the proxy tries


@pytest.mark.parametrize("layer", ["org", "project"])
def test_a_deny_set_mid_step_by_the_org_or_the_project_stops_the_next_call(
    layer, alice, script, make_session, worker
):
    script_id = script.load(
        [step(bash("c1", "sleep 4"), bash("c2", "echo should-not-run")), [{"text": "done"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"deny {layer}"))
    wait_for(lambda: running(session, "c1"), what="the first command running")
    deny = [{"permission": "bash", "pattern": "echo *", "action": "deny"}]
    if layer == "org":
        org_permission_policy_set(actor=alice.actor, org=alice.org, rules=deny)
    else:
        project_update(
            actor=alice.actor, project=Project.objects.get(pk=alice.project.pk), permission_rules=deny
        )
    wait_idle(session)

    parts = {p["callID"]: p["state"] for p in tool_parts(session)}
    assert parts["c1"]["status"] == "completed"
    assert parts["c2"]["status"] == "error" and "prevents you" in parts["c2"]["error"], parts["c2"]


def test_what_the_egress_proxy_refused_during_a_turn_is_audited_after_it(alice, script, make_session, worker):
    Project.objects.filter(pk=alice.project.pk).update(
        network_policy="allowlist", network_allowlist=["pypi.example.test"]
    )
    script_id = script.load([step(bash("c1", FETCH)), [{"text": "done"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("fetch"))
    wait_idle(session)
    assert "FETCH 403" in outputs(session)["c1"]
    # Written after the idle status (off the turn's critical path): waited for.
    rows = AuditEvent.objects.filter(action="egress.blocked", target_id=session.pk)
    blocked = wait_for(rows.first, timeout=20, what="the egress.blocked audit row")
    assert blocked.data["targets"] == ["GET 1.1.1.1:80"] and blocked.data["project"] == alice.project.pk
    assert blocked.actor_type == "system" and rows.count() == 1
