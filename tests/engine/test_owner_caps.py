"""Caps per person across the orgs they own (issue 25, M-f): anyone may create orgs, so the per-org caps
on runs, live sandboxes and sandbox disk also hold per owner, summed over every org that owner owns. "Per
user" is each owner of the org (hangar.engine.run.fairness says why): alice owning two orgs shares one cap
between them; charlie's org is never held back by alice's; an org the operator gave its own cap is judged
by that cap alone."""

import datetime as dt

import pytest
from django.utils import timezone

from hangar.accounts.models import Membership, Org, Role
from hangar.conversations.models import Session
from hangar.conversations.slot_selectors import sessions_waiting_for_slot
from hangar.engine.run.fairness import Capped, lease_acquire_fair
from hangar.engine.run.worker import run_session_once
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import manager
from hangar.projects.models import Project
from sandbox import budget
from sandbox.protocol import QuotaExceeded
from tests.conftest import Persona
from tests.engine.conftest import text_of, text_prompt, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alices_second_org(alice) -> Persona:
    """A second org alice made (and owns), with a project of its own."""
    org = Org.objects.create(name="Acme Labs", slug="acme-labs")
    membership = Membership.objects.create(org=org, user=alice.user, role=Role.OWNER)
    project = Project.objects.create(org=org, slug="lab", name="lab")
    return Persona(alice.user, org, membership, project, alice.token, alice.token_row)


def test_one_owners_orgs_share_one_run_cap(settings, alice, alices_second_org, charlie, make_session, script):
    settings.HANGAR_USER_MAX_RUNS = 2
    answer = script.load([[{"text": "ok"}]], loop=True)
    first, second, third = (
        make_session(alice, answer),
        make_session(alices_second_org, answer),
        make_session(alices_second_org, answer),
    )
    other = make_session(charlie, answer)

    lease_acquire_fair(first.pk, "w1")
    lease_acquire_fair(second.pk, "w1")
    # Each org holds one run, far below its own cap; their owner holds two, the most one person may.
    with pytest.raises(Capped):
        lease_acquire_fair(third.pk, "w1")
    lease_acquire_fair(other.pk, "w1")  # charlie's org is never held back by alice's

    # A run that ends frees its owner's slot, and its org's end wakes the owner's other orgs' waiters.
    Session.objects.filter(pk=third.pk).update(run_requested=True)
    Session.objects.filter(pk=first.pk).update(lease_owner="", lease_expires_at=None)
    assert third.pk in sessions_waiting_for_slot(org_id=alice.org.pk, exclude=first.pk, limit=2)
    lease_acquire_fair(third.pk, "w1")

    # An expired lease holds nothing; an org the operator gave its own cap counts for no one.
    Session.objects.filter(pk=second.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=60))
    lease_acquire_fair(first.pk, "w2")
    Org.objects.filter(pk=alices_second_org.org.pk).update(max_concurrent_runs=5)
    fourth = make_session(alices_second_org, answer)
    lease_acquire_fair(fourth.pk, "w2")


def test_one_owners_orgs_share_one_live_sandbox_cap(
    settings, alice, alices_second_org, charlie, script, make_session
):
    settings.HANGAR_USER_MAX_SANDBOXES = 1
    answer = script.load([[{"text": "ok"}]], loop=True)
    first, second = make_session(alice, answer), make_session(alices_second_org, answer)
    other = make_session(charlie, answer)
    for session, persona in ((first, alice), (other, charlie), (second, alices_second_org)):
        session_prompt(actor=persona.actor, session=session, parts=text_prompt("hi"))
        assert run_session_once(session.pk)
    boxes = manager()
    # Each org is far below its own cap (64), but alice's orgs together may keep one sandbox live: the
    # first org's idle one was hibernated for the second's.
    assert boxes.is_running(second.pk) and not boxes.is_running(first.pk)
    assert boxes.is_running(other.pk)

    session_prompt(actor=alice.actor, session=first, parts=text_prompt("again"))
    assert run_session_once(first.pk)
    assert boxes.is_running(first.pk) and not boxes.is_running(second.pk)
    assert text_of(wait_idle(first)).count("ok") == 2  # its workspace came back with it


def spec_of(session):
    from hangar.engine.workspace.specs import spec_for

    return spec_for(Session.objects.select_related("org", "project").get(pk=session.pk))


def test_one_owners_orgs_share_one_disk_budget(alice, alices_second_org, charlie, script, make_session):
    answer = script.load([[{"text": "ok"}]], loop=True)
    first = make_session(alice, answer)
    session_prompt(actor=alice.actor, session=first, parts=text_prompt("hi"))
    assert run_session_once(first.pk)  # a real workspace volume, written in alice's first org
    second_org = str(alices_second_org.org.pk)
    spec = spec_of(make_session(alices_second_org, answer))
    assert [sorted(group) for group in spec.disk_groups] == [sorted([str(alice.org.pk), second_org])]
    written = budget.org_written_mb(str(alice.org.pk))
    assert written >= 1  # a fresh workspace's file system holds a few MB

    # The second org has written nothing and its own budget is ample; its owner's orgs together are full.
    limits = budget.Limits(org_mb=10_000, owner_mb=int(written))
    assert budget.org_pressure(second_org, limits) == ""
    with pytest.raises(QuotaExceeded, match="owner exhausted"):
        budget.check_org(1, second_org, limits, spec.disk_groups)
    # charlie's org does not share alice's budget; and 0 turns the per-person budget off.
    charlies = spec_of(make_session(charlie, answer))
    assert charlies.disk_groups == [[str(charlie.org.pk)]]
    budget.check_org(1, str(charlie.org.pk), limits, charlies.disk_groups)
    budget.check_org(1, second_org, budget.Limits(org_mb=10_000, owner_mb=0), spec.disk_groups)
