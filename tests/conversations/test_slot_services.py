"""A run's lease within its org's cap (hangar.conversations.slot_services): one round trip, and the cap
holds when many runners race for an org's last slots."""

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from hangar.conversations.models import Session
from hangar.conversations.services import session_create
from hangar.conversations.slot_services import CAPPED, session_lease_acquire_within_cap

pytestmark = pytest.mark.django_db(transaction=True)


def acquire(session_id: str, owner: str, cap: int = 2):
    return session_lease_acquire_within_cap(session_id=session_id, owner=owner, ttl_s=15, default_cap=cap)


def sessions(persona, count: int) -> list[str]:
    return [
        session_create(actor=persona.actor, project=persona.project, title=f"s{i}").pk for i in range(count)
    ]


def test_a_free_lease_is_taken_an_held_one_refused_and_an_org_at_its_cap_waits(alice):
    first, second, third = sessions(alice, 3)
    with CaptureQueriesContext(connection) as queries:
        assert acquire(first, "runner-a") == ("", alice.org.pk)
    assert len(queries) == 1  # one round trip: no BEGIN, no COMMIT of its own
    assert acquire(first, "runner-b") == (None, alice.org.pk)  # held: another runner has it
    assert acquire(second, "runner-b") == ("", alice.org.pk)
    assert acquire(third, "runner-c") == (CAPPED, alice.org.pk)  # two live leases: the cap
    assert Session.objects.get(pk=third).lease_owner == ""
    Session.objects.filter(pk=first).update(lease_owner="", lease_expires_at=None)
    assert acquire(third, "runner-c") == ("", alice.org.pk)


def test_an_expired_lease_is_taken_over_and_names_its_previous_owner(alice):
    (only,) = sessions(alice, 1)
    acquire(only, "runner-a")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE conversations_session SET lease_expires_at = now() - interval '1 s'")
    assert acquire(only, "runner-b") == ("runner-a", alice.org.pk)


def test_a_missing_session_answers_none():
    assert acquire("ses_missing", "runner-a") == (None, None)


def test_racing_runners_never_take_more_than_the_cap(alice):
    ids = sessions(alice, 12)
    answers: dict[str, object] = {}
    start = threading.Barrier(len(ids))

    def run(session_id: str) -> None:
        try:
            start.wait()
            answers[session_id] = acquire(session_id, f"runner-{session_id}", cap=3)[0]
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [i for i, answer in answers.items() if answer == ""]
    assert len(taken) == 3 and sum(answer == CAPPED for answer in answers.values()) == 9
    assert Session.objects.exclude(lease_owner="").count() == 3
