"""The host registry's statements and the operator's tools, against the real Postgres (no worker here:
tests/engine/test_sandbox_hosts.py drives real workers): the heartbeat upsert, beat's lost marking,
drain and activate (manage.py sandbox_host, the superuser admin, the operator's API that the console's
Hosts screen uses), placement of a new session on this host, a project's labels, and the host-loss
notice a session shows again when opened."""

import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from hangar.accounts.models import Role, User
from hangar.audit.models import AuditEvent
from hangar.conversations.host_selectors import host_named
from hangar.conversations.host_services import (
    HostReport,
    host_heartbeat,
    hosts_mark_lost,
    session_moved_off_lost_host,
    session_sandbox_host_bind,
)
from hangar.conversations.models import Event, Message, SandboxHost, Session
from hangar.conversations.services import session_create
from hangar.engine.workspace import hosts
from hangar.engine.workspace.placement import BoundElsewhere
from sandbox.protocol import SandboxUnavailable
from tests.api.schema_check import assert_conforms
from tests.conftest import make_persona

pytestmark = pytest.mark.django_db


def report(name: str, **overrides) -> HostReport:
    values = {
        "name": name,
        "labels": ["ssd"],
        "cpus": 2.0,
        "memory_mb": 24000,
        "disk_mb": 250000,
        "free_disk_mb": 70000,
        "free_memory_mb": 20000,
        "live_sandboxes": 2,
        "org_live": {"1": 2},
    }
    return HostReport(**{**values, **overrides})


def age(name: str, seconds: float) -> None:
    SandboxHost.objects.filter(name=name).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds))


def test_the_first_heartbeat_registers_the_host_and_the_next_updates_it():
    assert host_heartbeat(report("h1")) == ("active", None)
    row = SandboxHost.objects.get(name="h1")
    assert (row.labels, row.free_memory_mb, row.live_sandboxes, row.org_live) == (["ssd"], 20000, 2, {"1": 2})
    first = row.heartbeat_at
    assert host_heartbeat(report("h1", free_memory_mb=123, live_sandboxes=0, org_live={})) == (
        "active",
        "active",
    )
    row.refresh_from_db()
    assert (row.free_memory_mb, row.live_sandboxes, row.org_live) == (123, 0, {})
    assert row.heartbeat_at >= first


def test_beat_marks_silent_hosts_lost_and_a_lost_host_that_beats_is_active_again():
    for name in ("fresh", "silent", "silent-draining", "silent-drained"):
        host_heartbeat(report(name))
    SandboxHost.objects.filter(name="silent-draining").update(state="draining")
    SandboxHost.objects.filter(name="silent-drained").update(state="drained")
    for name in ("silent", "silent-draining", "silent-drained"):
        age(name, 31)
    age("fresh", 29)

    assert sorted(hosts_mark_lost(silent_for_s=30)) == ["silent", "silent-draining"]
    states = dict(SandboxHost.objects.values_list("name", "state"))
    assert states == {
        "fresh": "active",
        "silent": "lost",
        "silent-draining": "lost",
        "silent-drained": "drained",
    }
    assert set(AuditEvent.objects.filter(action="sandbox_host.lost").values_list("target_id", flat=True)) == {
        "silent",
        "silent-draining",
    }
    assert hosts_mark_lost(silent_for_s=30) == []  # marked once

    assert host_heartbeat(report("silent")) == ("active", "lost")
    assert host_heartbeat(report("silent-drained")) == ("drained", "drained")  # only the operator activates


def test_the_manage_command_lists_drains_and_activates():
    host_heartbeat(report("box-1"))
    out = StringIO()
    call_command("sandbox_host", "list", stdout=out)
    assert "box-1\tactive\t" in out.getvalue() and "\tssd" in out.getvalue()

    out = StringIO()
    call_command("sandbox_host", "drain", "box-1", stdout=out)
    assert out.getvalue().strip() == "box-1: draining"
    assert SandboxHost.objects.get(name="box-1").state == "draining"
    audit = AuditEvent.objects.get(action="sandbox_host.drain")
    assert (audit.target_id, audit.data["from"], audit.data["to"]) == ("box-1", "active", "draining")

    call_command("sandbox_host", "activate", "box-1", stdout=StringIO())
    assert SandboxHost.objects.get(name="box-1").state == "active"
    assert AuditEvent.objects.filter(action="sandbox_host.activate").count() == 1

    with pytest.raises(CommandError, match="no sandbox host 'nope'"):
        call_command("sandbox_host", "drain", "nope")


def test_the_command_says_when_no_host_is_registered():
    out = StringIO()
    call_command("sandbox_host", "list", stdout=out)
    assert out.getvalue().strip() == "no sandbox host registered"


def test_only_a_superuser_sees_or_drains_hosts_in_the_admin(alice):
    host_heartbeat(report("box-2"))
    staff = alice.user  # alice owns her org: its staff in the tenant admin, never the operator
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/conversations/sandboxhost/").status_code in (302, 403)

    root = User.objects.create_superuser("root@ops.test", password="pw-root")
    client.force_login(root)
    assert b"box-2" in client.get("/admin/conversations/sandboxhost/").content
    response = client.post(
        "/admin/conversations/sandboxhost/", {"action": "drain", "_selected_action": ["box-2"]}
    )
    assert response.status_code == 302
    assert SandboxHost.objects.get(name="box-2").state == "draining"
    assert AuditEvent.objects.get(action="sandbox_host.drain").actor_label == "root@ops.test"


HOSTS = "/api/operator/hosts/"


def test_the_operator_lists_drains_and_activates_hosts_through_the_api(api):
    host_heartbeat(report("box-3", labels=["gpu"]))
    age("box-3", 12)
    root = User.objects.create_superuser("root@ops.test", password="pw-root")
    client = api()
    client.force_login(root)  # a browser session, as the console signs in
    assert client.get("/api/me").json()["operator"] is True

    (listed,) = assert_conforms(client.get(HOSTS), "operator_hosts_list")
    assert {k: listed[k] for k in ("name", "state", "labels", "cpus", "memory_mb", "free_disk_mb")} == {
        "name": "box-3",
        "state": "active",
        "labels": ["gpu"],
        "cpus": 2.0,
        "memory_mb": 24000,
        "free_disk_mb": 70000,
    }
    assert (listed["free_memory_mb"], listed["live_sandboxes"]) == (20000, 2)
    assert 12 <= listed["heartbeat_age_s"] < 60 and listed["heartbeat_at"]
    assert "org_live" not in listed  # no org's figures leave the registry

    assert assert_conforms(client.post(HOSTS + "box-3/drain"), "operator_host_drain")["state"] == "draining"
    assert SandboxHost.objects.get(name="box-3").state == "draining"
    audit = AuditEvent.objects.get(action="sandbox_host.drain")
    assert (audit.actor_label, audit.target_id, audit.org_id) == ("root@ops.test", "box-3", None)
    assert (audit.data["from"], audit.data["to"]) == ("active", "draining")

    assert (
        assert_conforms(client.post(HOSTS + "box-3/activate"), "operator_host_activate")["state"] == "active"
    )
    assert AuditEvent.objects.filter(action="sandbox_host.activate", actor_label="root@ops.test").count() == 1
    assert client.post(HOSTS + "nope/drain").status_code == 404


def test_hosts_are_invisible_to_everyone_but_the_operator(alice, bob, charlie, api):
    """An org's owner, a member, another org, anonymous callers and any API token (a superuser's too: a
    token acts in one org) get the same 404 as for a path that does not exist, and change nothing."""
    host_heartbeat(report("box-4"))
    operator = make_persona("ops@acme.test", alice.org, Role.OWNER, "rocket")
    operator.user.is_superuser = True
    operator.user.save()
    by_session = api()
    by_session.force_login(alice.user)
    callers = {
        "owner's session": by_session,
        "owner's token": api(alice),
        "member": api(bob),
        "other org": api(charlie),
        "anonymous": api(),
        "operator's token": api(operator),
    }
    for who, client in callers.items():
        for method, path in (
            ("get", HOSTS),
            ("post", HOSTS + "box-4/drain"),
            ("post", HOSTS + "box-4/activate"),
        ):
            response = getattr(client, method)(path)
            assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found"), (who, path)
    assert api(operator).get("/api/me").json()["operator"] is False
    assert by_session.get("/api/me").json()["operator"] is False
    assert SandboxHost.objects.get(name="box-4").state == "active"
    assert not AuditEvent.objects.filter(action__startswith="sandbox_host.").exists()


def test_a_session_opened_after_a_host_loss_shows_the_latest_notice(alice, charlie, api):
    """The move off a lost host is told by a durable `session.notice` event; opening the session (its
    detail, what the web app's session view reads first) carries the latest one, so a reload shows it."""
    host_heartbeat(report("lost-box"))
    session = session_create(actor=alice.actor, project=alice.project, model={})
    untold = session_create(actor=alice.actor, project=alice.project, model={})
    path = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    assert assert_conforms(api(alice).get(path + untold.pk + "/"), "sessions_get")["notice"] is None

    for n in (1, 2):
        Session.objects.filter(pk=session.pk).update(sandbox_host_id="lost-box")
        session.sandbox_host_id = "lost-box"
        assert session_moved_off_lost_host(
            session=session, lost="lost-box", tell=lambda n=n: f"moved, time {n}"
        )
    detail = assert_conforms(api(alice).get(path + session.pk + "/"), "sessions_get")
    notice = detail["notice"]
    assert {k: notice[k] for k in ("kind", "host", "message")} == {
        "kind": "sandbox_host_lost",
        "host": "lost-box",
        "message": "moved, time 2",
    }
    told_at = Event.objects.filter(session=session, type="session.notice").order_by("seq").last().created_at
    assert notice["time"] == int(told_at.timestamp() * 1000)
    assert detail["id"] == session.pk and detail["status"] == {"type": "idle"}
    assert api(charlie).get(path + session.pk + "/").status_code == 404


@pytest.fixture
def here(settings):
    settings.HANGAR_SANDBOX_HOST = "here-host"
    host_heartbeat(report("here-host"))
    return "here-host"


def test_a_new_session_is_placed_on_this_host_only_when_it_may_take_it(alice, here):
    def new():
        return session_create(actor=alice.actor, project=alice.project, model={})

    placed = new()
    assert hosts.place_here(placed, sandboxes=None)  # an active host with room: bound here at once
    assert Session.objects.get(pk=placed.pk).sandbox_host_id == here

    SandboxHost.objects.filter(name=here).update(state="draining")
    with pytest.raises(SandboxUnavailable, match="here-host is draining"):
        hosts.place_here(new(), sandboxes=None)

    SandboxHost.objects.filter(name=here).update(state="active", free_memory_mb=100)
    refused = new()
    with pytest.raises(SandboxUnavailable, match="100 MB of memory free, the sandbox asks 1024 MB"):
        hosts.place_here(refused, sandboxes=None)
    assert Session.objects.get(pk=refused.pk).sandbox_host_id is None  # a refusal binds nothing


def test_a_burst_of_one_orgs_new_sessions_spreads_over_hosts_within_one_heartbeat(alice, charlie):
    """Six new sessions of one org placed before any heartbeat reports their sandboxes: three per host,
    not six on the host the last heartbeat found emptiest; another org's count is its own."""
    tag = uuid.uuid4().hex[:6]  # the recent placements live in Redis beyond this test's database
    names = [f"burst-a-{tag}", f"burst-b-{tag}"]
    for name in names:
        host_heartbeat(report(name, org_live={}))
    SandboxHost.objects.filter(name=names[1]).update(free_memory_mb=20001)  # B first on equal counts

    def new(persona):
        return session_create(actor=persona.actor, project=persona.project, model={})

    chosen = [hosts.choose_host(new(alice)) for _ in range(6)]
    assert chosen == [names[1], names[0]] * 3
    assert hosts.choose_host(new(charlie)) == names[1]
    # What a heartbeat reports counts besides: B reporting 3 of the org's sandboxes sends the next to A.
    SandboxHost.objects.filter(name=names[1]).update(org_live={str(alice.org.pk): 3})
    assert hosts.choose_host(new(alice)) == names[0]


def test_settled_sessions_are_those_no_run_holds_or_waits_for(alice):
    """What the checkpoint sweep takes as a run that is over (sandbox.workspace_checkpoint, `settled`)."""
    from hangar.conversations.host_selectors import sessions_settled

    made = [session_create(actor=alice.actor, project=alice.project, model={}) for _ in range(4)]
    Session.objects.filter(pk=made[1].pk).update(status="busy", lease_owner="w1")
    Session.objects.filter(pk=made[2].pk).update(run_requested=True)
    Session.objects.filter(pk=made[3].pk).update(lease_owner="w2")  # its runner took it, not yet busy
    assert sessions_settled([s.pk for s in made] + ["ses_gone"]) == {made[0].pk}


def test_a_homeless_session_is_bound_by_the_first_host_only(alice, here):
    """Two hosts taking one homeless session: the conditional bind lets one win; the other is told where
    it is (BoundElsewhere, which a worker without Docker follows), and has bound nothing. A host that bound
    it and then failed with nothing of it made lets it go."""
    host_heartbeat(report("other"))
    session = session_create(actor=alice.actor, project=alice.project, model={})
    stale = Session.objects.get(pk=session.pk)  # read homeless, as the second host read it
    assert session_sandbox_host_bind(session=session, host_name="other") == "other"
    with pytest.raises(BoundElsewhere, match="on sandbox host other, which this worker") as refused:
        hosts.place_here(stale, sandboxes=None)
    assert refused.value.host == "other"
    assert Session.objects.get(pk=session.pk).sandbox_host_id == "other"

    Session.objects.filter(pk=session.pk).update(sandbox_host_id=None)
    fresh = Session.objects.get(pk=session.pk)
    assert hosts.place_here(fresh, sandboxes=None)
    hosts.unbind_if_empty(fresh)  # nothing of it on this host (no registry record)
    assert Session.objects.get(pk=session.pk).sandbox_host_id is None


def test_a_project_that_requires_a_label_the_host_lacks_is_refused(alice, here):
    alice.project.sandbox_labels = ["gpu"]
    alice.project.save()
    session = session_create(actor=alice.actor, project=alice.project, model={})
    with pytest.raises(SandboxUnavailable, match="here-host lacks the project's required label gpu"):
        hosts.place_here(session, sandboxes=None)
    alice.project.sandbox_labels = ["ssd"]
    alice.project.save()
    session.project.refresh_from_db()
    hosts.place_here(session, sandboxes=None)


def test_a_session_placed_already_stays_on_its_host_whatever_its_state(alice, here):
    session = session_create(actor=alice.actor, project=alice.project, model={})
    hosts.record_placed(session)
    assert SandboxHost.objects.get(name=here).sessions.get().pk == session.pk
    SandboxHost.objects.filter(name=here).update(state="draining")
    hosts.place_here(session, sandboxes=None)  # its busy run finishes there

    host_heartbeat(report("elsewhere"))
    session.sandbox_host_id = "elsewhere"
    with pytest.raises(SandboxUnavailable, match="on sandbox host elsewhere, which this worker"):
        hosts.place_here(session, sandboxes=None)


@pytest.mark.parametrize(
    "labels", [["GPU"], "gpu", ["gpu", "gpu"], [""], [1], [f"l{i}" for i in range(9)], ["a" * 33]]
)
def test_a_projects_sandbox_labels_are_validated(alice, labels):
    alice.project.sandbox_labels = labels
    with pytest.raises(DjangoValidationError):
        alice.project.full_clean()


def test_good_sandbox_labels_pass(alice):
    alice.project.sandbox_labels = ["gpu", "large", "zone-eu.1"]
    alice.project.full_clean()


MODEL = {"providerID": "scripted", "modelID": "fast"}


def _busy_with_prompt(session, owner: str = "") -> None:
    from hangar.conversations.services import message_create, now_ms

    message_create(
        session=session,
        data={"role": "user", "time": {"created": now_ms()}, "agent": "build", "model": MODEL},
    )
    Session.objects.filter(pk=session.pk).update(status="busy", lease_owner=owner)


def test_the_sweep_ends_the_busy_sessions_and_tasks_on_a_lost_host_only(alice):
    from hangar.engine.run.host_loss import sweep

    host_heartbeat(report("gone"))
    host_heartbeat(report("alive"))
    age("gone", 120)
    make = lambda **kw: session_create(actor=alice.actor, project=alice.project, model={}, **kw)  # noqa: E731
    root = make()
    Session.objects.filter(pk=root.pk).update(sandbox_host_id="gone")
    child = make(parent=root)
    grandchild = make(parent=child)
    elsewhere = make()
    Session.objects.filter(pk=elsewhere.pk).update(sandbox_host_id="alive")
    idle_on_gone = make()
    Session.objects.filter(pk=idle_on_gone.pk).update(sandbox_host_id="gone")
    _busy_with_prompt(root, owner="dead-worker:1:abc")  # a runner that will never renew
    _busy_with_prompt(grandchild)  # its parent idle, itself still busy: ended too
    _busy_with_prompt(elsewhere, owner="live-worker:2:def")

    report_ = sweep()
    assert report_["lost"] == ["gone"]
    assert report_["ended"] == [root.pk, grandchild.pk]  # roots first
    for session in (root, grandchild):
        row = Session.objects.get(pk=session.pk)
        assert (row.status, row.lease_owner) == ("idle", "")
        (error,) = [e.payload["error"] for e in Event.objects.filter(session=session, type="session.error")]
        assert error["name"] == "SandboxHostLostError"
        answer = Message.objects.filter(session=session, role="assistant").get()
        assert answer.data["error"]["name"] == "UnknownError"
        assert answer.data["error"]["data"]["message"].startswith("sandbox host lost")
    assert (
        "(gone)" in Event.objects.get(session=root, type="session.error").payload["error"]["data"]["message"]
    )
    untouched = Session.objects.get(pk=elsewhere.pk)
    assert (untouched.status, untouched.lease_owner) == ("busy", "live-worker:2:def")
    assert Session.objects.get(pk=idle_on_gone.pk).status == "idle"
    assert sweep() == {"lost": [], "ended": []}  # nothing is ended twice


def test_a_draining_host_hibernates_idle_and_orphaned_sandboxes_never_busy_ones(alice):
    """A live sandbox whose session is gone (deleted, or another database's) is no one's work: it must not
    hold a draining host from `drained` for ever (seen in CI: an earlier test's sandbox on the same root)."""
    from hangar.conversations.host_selectors import sessions_not_busy

    make = lambda: session_create(actor=alice.actor, project=alice.project, model={})  # noqa: E731
    idle, busy, leased = make(), make(), make()
    Session.objects.filter(pk=busy.pk).update(status="busy")
    Session.objects.filter(pk=leased.pk).update(lease_owner="worker:1:abc")
    orphan = "ses_gone_from_this_database"
    assert sessions_not_busy([idle.pk, busy.pk, leased.pk, orphan]) == [idle.pk, orphan]


def test_what_orgs_wrote_on_the_other_hosts_reaches_the_watermark_and_an_import(alice, here, monkeypatch):
    """The per-org disk checks a host makes besides a new workspace's (sandbox/watermark.py, an import:
    tests/sandbox/test_budget_other_hosts.py) are handed the other hosts' reports, never this host's
    own (its disk is counted as it is)."""
    from hangar.engine.workspace import reaping, sandboxes
    from sandbox import watermark, workspace_archive

    host_heartbeat(report("other", org_written_mb={"7": 30.0, "8": 1.5}))
    host_heartbeat(report("third", org_written_mb={"7": 5.0}))
    host_heartbeat(report(here, org_written_mb={"7": 99.0}))
    assert hosts.written_elsewhere() == {"7": 35.0, "8": 1.5}
    assert hosts.written_elsewhere({"8"}) == {"8": 1.5}

    swept, imported = [], []
    monkeypatch.setattr(sandboxes, "manager", lambda: "this host's sandboxes")
    monkeypatch.setattr(
        watermark,
        "sweep",
        lambda manager, elsewhere=None: swept.append(elsewhere) or watermark.WatermarkReport(),
    )
    reaping.watermark()
    assert swept == [{"7": 35.0, "8": 1.5}]

    monkeypatch.setattr(workspace_archive, "archive_dir", lambda: "/archive")
    monkeypatch.setattr(workspace_archive, "exported", lambda session_id: True)
    monkeypatch.setattr(
        workspace_archive, "import_", lambda session_id, elsewhere=None: imported.append(elsewhere)
    )
    hosts.move_in(session_create(actor=alice.actor, project=alice.project, model={}))
    assert imported == [{"7": 35.0, "8": 1.5}]


def test_a_workspace_made_here_before_the_host_registered_binds_once_the_host_reports(
    alice, settings, tmp_path, monkeypatch
):
    """A session whose sandbox this host made before any heartbeat (a worker's first use of a sandbox it
    made itself: bench/step_cpu.py provisions so) is bound to a host row that exists: the host reports
    first, instead of the binding failing on the missing row (stop 38: a ForeignKey violation)."""
    from hangar.engine.workspace.sandboxes import manager
    from sandbox import registry, volumes

    settings.HANGAR_SANDBOX_HOST = f"unreported-{uuid.uuid4().hex[:6]}"
    monkeypatch.setattr(volumes, "ROOT", tmp_path)  # this host's registry, holding the one record below
    session = session_create(actor=alice.actor, project=alice.project, model={})
    assert registry.register(volumes.session_key(session.pk), {"session_id": session.pk})
    assert host_named(settings.HANGAR_SANDBOX_HOST) is None

    assert hosts.place_here(session, sandboxes=manager())
    assert Session.objects.get(pk=session.pk).sandbox_host_id == settings.HANGAR_SANDBOX_HOST
    assert host_named(settings.HANGAR_SANDBOX_HOST).state == "active"
