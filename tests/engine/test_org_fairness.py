"""M10: per-org fair shares. One org flooding the workers cannot delay another org's run; its own runs
queue (busy, never lost) and all finish; its live sandboxes stay under its cap; only the platform
operator sets the caps."""

import time

import pytest
from django.core.management import call_command
from django.utils import timezone

from hangar.accounts.actors import system_actor
from hangar.accounts.models import Org
from hangar.accounts.org_policy_services import org_limits_set
from hangar.conversations.models import Part, Session
from hangar.engine.run.fairness import recoverable
from hangar.engine.run.worker import run_session_once
from hangar.engine.services import session_prompt
from hangar.engine.tasks import recover_expired_runs
from hangar.engine.workspace.sandboxes import manager
from hangar.errors import PermissionDenied, ValidationError
from tests.engine.conftest import text_of, text_prompt, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_THREADS = 4
A_CAP = 2
A_RUNS = 8  # more than A's cap and more than the worker's threads


def set_limits(org, runs=None, sandboxes=None):
    return org_limits_set(
        actor=system_actor(org.pk, "test"), org=org, max_concurrent_runs=runs, max_live_sandboxes=sandboxes
    )


def test_org_b_starts_before_org_as_queued_runs_while_a_floods_and_all_of_a_finish(
    alice, charlie, script, make_session, start_worker
):
    set_limits(alice.org, runs=A_CAP)
    start_worker(concurrency=WORKER_THREADS)
    slow = script.load([[{"delay": 4}, {"text": "a done"}]])
    quick = script.load([[{"text": "b done"}]], loop=True)
    a_sessions = [make_session(alice, slow) for _ in range(A_RUNS)]
    b_session = make_session(charlie, quick)
    # B's sandbox exists before the clock starts (as in bench/): what is timed is waiting for a worker.
    session_prompt(actor=charlie.actor, session=b_session, parts=text_prompt("warm up"))
    wait_idle(b_session, timeout=120)
    for i, session in enumerate(a_sessions):  # each its own conversation of the script
        session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"flood {i}"))
    # A at its cap and its running sessions past their sandbox's creation (in their model call): what B
    # then waits for is a worker thread, not CPU shared with Docker on this small machine.
    wait_for(
        lambda: (
            Session.objects.filter(org=alice.org).exclude(lease_owner="").count() == A_CAP
            and Part.objects.filter(session__org=alice.org, type="step-start").count() >= A_CAP
        ),
        timeout=60,
        what="org A at its cap, in its model calls",
    )

    steps_before = Part.objects.filter(session=b_session, type="step-start").count()
    queued = list(Session.objects.filter(org=alice.org, lease_owner="").values_list("pk", flat=True))
    prompted = time.monotonic()
    session_prompt(actor=charlie.actor, session=b_session, parts=text_prompt("my turn"))
    wait_for(
        lambda: Part.objects.filter(session=b_session, type="step-start").count() > steps_before,
        timeout=30,
        every=0.02,
        what="org B's first step",
    )
    first_step_after = time.monotonic() - prompted
    # The fairness guarantee: B's run started before any of A's queued runs did (they start only as A's
    # running ones end, each 4 s long), so B never waited behind A's flood; and within the 2 s
    # (it once took 2.2 s in full runs: a freed worker thread did not wake the worker's event loop,
    # hangar/celery_pool.py).
    assert not Part.objects.filter(session_id__in=queued, type="step-start").exists()
    assert first_step_after < 2.0, first_step_after
    assert Session.objects.filter(org=alice.org, run_requested=True).count() >= A_RUNS - 2 * A_CAP

    # A's runs wait their turn as busy (queued, none lost), at most A_CAP at a time, and all finish.
    most_running = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rows = list(Session.objects.filter(pk__in=[s.pk for s in a_sessions]).values("status", "lease_owner"))
        most_running = max(most_running, sum(1 for r in rows if r["lease_owner"]))
        assert all(r["status"] in ("busy", "idle") for r in rows)
        if all(r["status"] == "idle" for r in rows):
            break
        time.sleep(0.05)
    assert most_running <= A_CAP
    for session in a_sessions:
        assert text_of(wait_idle(session, timeout=5)) == "a done"
    assert text_of(wait_idle(b_session)) == "b doneb done"


def test_a_new_live_sandbox_hibernates_the_orgs_least_recent_idle_one_at_its_cap(
    alice, charlie, script, make_session
):
    set_limits(alice.org, sandboxes=1)
    answer = script.load([[{"text": "ok"}]], loop=True)
    first, second = make_session(alice, answer), make_session(alice, answer)
    other_org = make_session(charlie, answer)
    for session, persona in ((first, alice), (other_org, charlie), (second, alice)):
        session_prompt(actor=persona.actor, session=session, parts=text_prompt("hi"))
        assert run_session_once(session.pk)
    boxes = manager()
    assert boxes.is_running(second.pk) and not boxes.is_running(first.pk)
    assert boxes.is_running(other_org.pk)  # another org's sandbox is never taken for this one

    session_prompt(actor=alice.actor, session=first, parts=text_prompt("again"))
    assert run_session_once(first.pk)
    assert boxes.is_running(first.pk) and not boxes.is_running(second.pk)
    assert text_of(wait_idle(first)).count("ok") == 2  # the workspace came back with the session


def test_only_the_platform_operator_sets_org_limits(alice, capsys):
    with pytest.raises(PermissionDenied):  # an org's own owner cannot raise its share
        org_limits_set(actor=alice.actor, org=alice.org, max_concurrent_runs=500, max_live_sandboxes=None)
    with pytest.raises(ValidationError) as bad:
        set_limits(alice.org, runs=0)
    assert "max_concurrent_runs" in bad.value.detail
    assert Org.objects.get(pk=alice.org.pk).max_concurrent_runs is None

    call_command("org_limits", alice.org.slug, "--runs", "3", "--sandboxes", "5")
    org = Org.objects.get(pk=alice.org.pk)
    assert (org.max_concurrent_runs, org.max_live_sandboxes) == (3, 5)
    call_command("org_limits", alice.org.slug, "--runs", "default")
    assert Org.objects.get(pk=alice.org.pk).max_concurrent_runs is None
    assert "runs 32 (default), sandboxes 5" in capsys.readouterr().out


def test_recovery_sends_an_org_only_as_many_waiting_runs_as_it_has_free_slots(
    alice, charlie, script, make_session
):
    set_limits(alice.org, runs=1)
    answer = script.load([[{"text": "ok"}]], loop=True)
    running, *waiting = [make_session(alice, answer) for _ in range(4)]
    other = make_session(charlie, answer)
    stale = timezone.now() - timezone.timedelta(minutes=5)
    Session.objects.filter(pk__in=[s.pk for s in (*waiting, other)]).update(
        run_requested=True, updated_at=stale
    )
    Session.objects.filter(pk=running.pk).update(
        lease_owner="elsewhere:1:x", lease_expires_at=timezone.now() + timezone.timedelta(minutes=1)
    )
    assert sorted(recoverable([s.pk for s in (*waiting, other)])) == [other.pk]  # A is at its cap

    Session.objects.filter(pk=running.pk).update(lease_owner="", lease_expires_at=None)
    oldest = min(waiting, key=lambda s: s.pk)
    Session.objects.filter(pk=oldest.pk).update(updated_at=stale - timezone.timedelta(minutes=1))
    assert sorted(recoverable([s.pk for s in (*waiting, other)])) == sorted([oldest.pk, other.pk])
    assert recover_expired_runs() == 2
