"""The org's cap on live sandboxes and its disk budget hold across sandbox hosts (issue 29;
hangar.engine.workspace.sandbox_share): host A (this machine's engine) and host B
(deploy/hosts/hostb.sh), a host service each, an engine worker without Docker, as
tests/engine/test_two_hosts.py sets them up.

The org has a cap of 1. Its first session lands on B (A drained meanwhile) and goes idle, its sandbox live
there; another org's session is live too. The org's second session is placed on A (the org spread over
the hosts): A's host service counts B's live sandbox from the registry, asks B's queue to hibernate it,
and only then starts its own: at no moment are two of the org's sandboxes live (Docker's own events on
the two engines say when B's stopped and A's started). The other org's sandbox is untouched.

The org disk budget likewise: what the org wrote on B, carried by B's heartbeat, refuses its next
workspace on A, where it wrote nothing (sandbox.budget, SandboxSpec.disk_elsewhere_mb).
"""

from __future__ import annotations

import time
from io import StringIO

import docker
import pytest
from django.core.management import call_command

from hangar.conversations.models import Message, SandboxHost, Session
from hangar.engine.services import session_prompt
from sandbox import containers
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.engine.test_two_hosts import _running_on, call
from tests.engine.two_hosts_rig import start_two_hosts
from tests.sandbox.hostb import host_b  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def _events(client, name: str, since: float, action: str) -> list[int]:
    """When (ns) the engine reported `action` for container `name` since `since`."""
    found = client.api.events(
        since=int(since),
        until=int(time.time()) + 1,
        decode=True,
        filters={"container": name, "event": action},
    )
    return [int(e["timeNano"]) for e in found]


def _prompt(persona, make_session, script, n: int, request, host_b, command: str = ""):  # noqa: F811
    command = command or f"echo {n} > n.txt"
    script_id = script.load(
        [[call("bash", f"b{n}", command=command, description="n")], [{"text": f"Done {n}."}]]
    )
    session = make_session(persona, script_id)
    request.addfinalizer(lambda sid=session.pk: host_b.destroy(sid))
    session_prompt(actor=persona.actor, session=session, parts=text_prompt("go"))
    session = wait_idle(session, timeout=240)
    assert text_of(session) == f"Done {n}.", [t["state"] for t in tool_parts(session)]
    return Session.objects.get(pk=session.pk)


def _two_hosts(host_b, start_worker, monkeypatch, tmp_path, tag: str, env: dict) -> tuple[str, str]:  # noqa: F811
    """Host services for A and B (with `env`) and an engine worker without Docker; (A's name, B's)."""
    hosts = start_two_hosts(host_b, start_worker, monkeypatch, tmp_path, tag, services=env)
    return hosts.a, hosts.b


def _on_b_first(host_a_name: str) -> None:
    """Drain A until the next session is placed: it goes to B."""
    call_command("sandbox_host", "drain", host_a_name, stdout=StringIO())
    wait_for(lambda: SandboxHost.objects.get(name=host_a_name).state == "drained", 60, what="A drained")


def test_the_org_cap_counts_every_host_and_makes_room_on_the_other(
    host_b,  # noqa: F811
    alice,
    charlie,
    script,
    make_session,
    start_worker,
    monkeypatch,
    tmp_path,
    request,
):
    docker_client = docker.from_env()
    host_a_name, host_b_name = _two_hosts(host_b, start_worker, monkeypatch, tmp_path, "cap", {})
    alice.org.max_live_sandboxes = 1
    alice.org.save(update_fields=["max_live_sandboxes"])
    org, other = str(alice.org.pk), str(charlie.org.pk)

    # The org's first session on B (A drained meanwhile), and another org's session (on either host).
    _on_b_first(host_a_name)
    first = _prompt(alice, make_session, script, 1, request, host_b)
    assert first.sandbox_host_id == host_b_name
    call_command("sandbox_host", "activate", host_a_name, stdout=StringIO())
    theirs = _prompt(charlie, make_session, script, 3, request, host_b)
    theirs_client = host_b.client if theirs.sandbox_host_id == host_b_name else docker_client
    assert _running_on(host_b.client, first.pk) and _running_on(theirs_client, theirs.pk)
    # B has reported it (at once, when it made it live: not a heartbeat later).
    assert SandboxHost.objects.get(name=host_b_name).org_live.get(org) == 1

    # The org's second session: placed on A (B holds the org's one), which makes room on B first.
    since = time.time() - 1
    second = _prompt(alice, make_session, script, 2, request, host_b)
    assert second.sandbox_host_id == host_a_name
    assert _running_on(docker_client, second.pk)
    assert not _running_on(host_b.client, first.pk), "the org's sandbox on B is still live: two live"
    stopped = _events(host_b.client, containers.session_container_name(first.pk), since, "die")
    started = _events(docker_client, containers.session_container_name(second.pk), since, "start")
    assert stopped and started and max(stopped) < min(started), (stopped, started)
    wait_for(
        lambda: SandboxHost.objects.get(name=host_b_name).org_live.get(org, 0) == 0,
        30,
        what="B reporting the org's sandbox gone",
    )
    # The other org is unaffected: its sandbox is still live where it was.
    assert _running_on(theirs_client, theirs.pk)
    live = sum(int(h.org_live.get(other, 0)) for h in SandboxHost.objects.all())
    assert live == 1

    # The first session's next prompt: it resumes on B (its workspace is there), and B makes room on A.
    script.load(
        [[call("bash", "again", command="cat n.txt", description="again")], [{"text": "Back."}]],
        script_id=first.model["modelID"],
    )
    since = time.time() - 1
    session_prompt(actor=alice.actor, session=first, parts=text_prompt("again"))
    back = wait_idle(first, timeout=240)
    assert text_of(back).endswith("Back."), [t["state"] for t in tool_parts(back)]
    assert tool_parts(back)[-1]["state"]["output"].strip() == "1"
    assert _running_on(host_b.client, first.pk) and not _running_on(docker_client, second.pk)
    stopped = _events(docker_client, containers.session_container_name(second.pk), since, "die")
    started = _events(host_b.client, containers.session_container_name(first.pk), since, "start")
    assert stopped and started and max(stopped) < min(started), (stopped, started)


def test_at_its_cap_with_its_sandbox_on_the_other_host_busy_the_org_is_refused_never_two_live(
    host_b,  # noqa: F811
    alice,
    script,
    make_session,
    start_worker,
    monkeypatch,
    tmp_path,
    request,
):
    """Cap 1, the org's session on B busy (a long command): its next session, placed on A, waits for room
    (make_room's wait), then fails with today's message; B's sandbox was never hibernated, and A never
    started one."""
    docker_client = docker.from_env()
    host_a_name, host_b_name = _two_hosts(host_b, start_worker, monkeypatch, tmp_path, "full", {})
    alice.org.max_live_sandboxes = 1
    alice.org.save(update_fields=["max_live_sandboxes"])

    _on_b_first(host_a_name)
    busy_id = script.load(
        [[call("bash", "long", command="sleep 75; echo slept", description="long")], [{"text": "Slept."}]]
    )
    busy = make_session(alice, busy_id)
    request.addfinalizer(lambda: host_b.destroy(busy.pk))
    session_prompt(actor=alice.actor, session=busy, parts=text_prompt("sleep"))
    wait_for(
        lambda: any(t["state"]["status"] == "running" for t in tool_parts(busy)), 120, what="the long command"
    )
    assert Session.objects.get(pk=busy.pk).sandbox_host_id == host_b_name
    call_command("sandbox_host", "activate", host_a_name, stdout=StringIO())

    script_id = script.load([[call("bash", "b2", command="echo 2", description="n")], [{"text": "Done 2."}]])
    second = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=second, parts=text_prompt("go"))
    second = wait_idle(second, timeout=120)
    error = Message.objects.filter(session=second, role="assistant").last().data.get("error") or {}
    message = (error.get("data") or {}).get("message", "")
    assert "your organisation already runs 1 sandboxes (its limit), all busy" in message, error
    assert Session.objects.get(pk=second.pk).sandbox_host_id in (None, host_a_name)
    assert not _running_on(docker_client, second.pk)
    # The busy one on B was left alone and ends its command.
    assert Session.objects.get(pk=busy.pk).status == "busy" and _running_on(host_b.client, busy.pk)
    busy = wait_idle(busy, timeout=120)
    assert text_of(busy) == "Slept." and tool_parts(busy)[0]["state"]["output"].strip() == "slept"


def test_the_org_disk_budget_counts_what_it_wrote_on_every_host(
    host_b,  # noqa: F811
    alice,
    charlie,
    script,
    make_session,
    start_worker,
    monkeypatch,
    tmp_path,
    request,
):
    """An org budget of 40 MB: the org writes 48 MB on B; its next workspace, placed on A, is refused with
    the budget's message naming the other hosts' share; another org still starts on A."""
    docker_client = docker.from_env()
    budget = {"HANGAR_SANDBOX_ORG_DISK_BUDGET_MB": "40"}
    host_a_name, host_b_name = _two_hosts(host_b, start_worker, monkeypatch, tmp_path, "disk", budget)
    for persona in (alice, charlie):
        persona.project.sandbox_disk_mb = 128
        persona.project.save(update_fields=["sandbox_disk_mb"])
    org = str(alice.org.pk)

    _on_b_first(host_a_name)
    fill = "head -c 48M /dev/urandom > fill.bin && sync && echo 1 > n.txt"
    first = _prompt(alice, make_session, script, 1, request, host_b, command=fill)
    assert first.sandbox_host_id == host_b_name
    call_command("sandbox_host", "activate", host_a_name, stdout=StringIO())
    # B's heartbeat carries what the org wrote there.
    wait_for(
        lambda: SandboxHost.objects.get(name=host_b_name).org_written_mb.get(org, 0) >= 48,
        30,
        what="B reporting the org's written bytes",
    )
    assert SandboxHost.objects.get(name=host_a_name).org_written_mb.get(org, 0) == 0

    # The org's next session is placed on A (B holds the org's one), where the org has written nothing.
    script_id = script.load([[call("bash", "b2", command="echo 2", description="n")], [{"text": "Done 2."}]])
    second = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=second, parts=text_prompt("go"))
    second = wait_idle(second, timeout=240)
    assert Session.objects.get(pk=second.pk).sandbox_host_id in (None, host_a_name)
    error = Message.objects.filter(session=second, role="assistant").last().data.get("error") or {}
    message = (error.get("data") or {}).get("message", "")
    assert "organisation sandbox disk budget exhausted" in message and "of 40 MB written" in message, error
    assert "MB on other sandbox hosts" in message, message
    assert not _running_on(docker_client, second.pk) and not _running_on(host_b.client, second.pk)

    # Another org is not held by it: its session starts (on either host) and runs.
    theirs = _prompt(charlie, make_session, script, 3, request, host_b)
    assert theirs.sandbox_host_id in (host_a_name, host_b_name)
