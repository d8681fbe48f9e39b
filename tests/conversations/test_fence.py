"""A fenced write (hangar.conversations.fence) lands only while the writer owns the session's lease, and a
refused one leaves nothing behind: not the event, not the part row riding in the same statement."""

import pytest

from hangar.conversations.fence import LeaseLost, fenced
from hangar.conversations.models import Event, Part, Session
from hangar.conversations.services import message_create, part_upsert, session_create

pytestmark = pytest.mark.django_db(transaction=True)
USER = {
    "role": "user",
    "time": {"created": 1},
    "agent": "build",
    "model": {"providerID": "p", "modelID": "m"},
}


@pytest.fixture
def message(alice):
    session = session_create(actor=alice.actor, project=alice.project, title="mine")
    Session.objects.filter(pk=session.pk).update(lease_owner="runner-a")
    return message_create(session=session, data=USER)


def test_the_lease_owner_writes_through_the_fence(message):
    with fenced(message.session_id, "runner-a"):
        part_upsert(message=message, data={"type": "text", "text": "mine"})
    assert Part.objects.filter(message=message).count() == 1


def test_a_runner_that_lost_the_lease_writes_nothing(message):
    Session.objects.filter(pk=message.session_id).update(lease_owner="runner-b")
    seq = Session.objects.get(pk=message.session_id).event_seq
    with fenced(message.session_id, "runner-a"), pytest.raises(LeaseLost):
        part_upsert(message=message, data={"type": "text", "text": "stale"})
    assert not Part.objects.filter(message=message).exists()
    assert not Event.objects.filter(session_id=message.session_id, seq__gt=seq).exists()
    assert Session.objects.get(pk=message.session_id).event_seq == seq


def test_writes_to_other_sessions_are_not_fenced(alice, message):
    other = session_create(actor=alice.actor, project=alice.project, title="other")
    with fenced(message.session_id, "runner-a"):
        message_create(session=other, data=USER)
    assert other.messages.count() == 1
