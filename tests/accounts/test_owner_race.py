"""Low: two owners leaving (or being removed or demoted) at once must never leave an org with no owner.
Each change counts the owners and then writes; two transactions that both count before either writes
each see a second owner. The hooks below hold each transaction after its count (inside the service,
before commit) until the other has counted too, or until a short wait proves the other is blocked."""

import threading

import pytest
from django.db import connection
from django.db.models.signals import post_save

from hangar.accounts.models import Membership, Role
from hangar.accounts.services import member_remove, member_role_change
from hangar.accounts.signals import member_leaving
from hangar.errors import NotFound, PermissionDenied, ValidationError


@pytest.fixture
def two_owners(transactional_db, alice, bob):
    Membership.objects.filter(pk=bob.membership.pk).update(role=Role.OWNER)
    return alice, bob


@pytest.fixture
def meeting_point():
    """Both services pause here (after their owner count, before commit) until the other arrives."""
    barrier = threading.Barrier(2, timeout=2)

    def pause(**_kwargs):
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # the other transaction is waiting on a lock: the fix at work
        return 0

    member_leaving.connect(pause, dispatch_uid="owner-race")
    post_save.connect(pause, sender=Membership, dispatch_uid="owner-race-save")
    yield
    member_leaving.disconnect(dispatch_uid="owner-race")
    post_save.disconnect(sender=Membership, dispatch_uid="owner-race-save")


def _at_once(*calls) -> list:
    outcomes: list = [None] * len(calls)

    def run(i, call):
        try:
            call()
            outcomes[i] = "ok"
        # Refused: the rule held (who is owner changed), or the actor was removed from the org first.
        except (ValidationError, PermissionDenied, NotFound) as exc:
            outcomes[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    [t.start() for t in threads]
    [t.join(timeout=30) for t in threads]
    return outcomes


def _owners(org) -> int:
    return Membership.objects.filter(org=org, role=Role.OWNER).count()


def test_two_owners_leaving_at_once_leave_one_owner(two_owners, meeting_point):
    alice, bob = two_owners
    outcomes = _at_once(
        lambda: member_remove(actor=alice.actor, membership=Membership.objects.get(user=alice.user)),
        lambda: member_remove(actor=bob.actor, membership=Membership.objects.get(user=bob.user)),
    )
    assert sorted(map(str, outcomes)).count("ok") == 1, outcomes
    assert _owners(alice.org) == 1


def test_an_owner_removed_while_the_other_is_demoted_leaves_one_owner(two_owners, meeting_point):
    alice, bob = two_owners
    outcomes = _at_once(
        lambda: member_remove(actor=alice.actor, membership=Membership.objects.get(user=bob.user)),
        lambda: member_role_change(
            actor=bob.actor, membership=Membership.objects.get(user=alice.user), role=Role.ADMIN
        ),
    )
    assert [o == "ok" for o in outcomes].count(True) == 1, outcomes
    assert _owners(alice.org) == 1


def test_two_owners_demoting_themselves_at_once_leave_one_owner(two_owners, meeting_point):
    alice, bob = two_owners
    outcomes = _at_once(
        lambda: member_role_change(
            actor=alice.actor, membership=Membership.objects.get(user=alice.user), role=Role.MEMBER
        ),
        lambda: member_role_change(
            actor=bob.actor, membership=Membership.objects.get(user=bob.user), role=Role.MEMBER
        ),
    )
    assert [o == "ok" for o in outcomes].count(True) == 1, outcomes
    assert _owners(alice.org) == 1
