"""Tenant-scoped reads of the conversation store."""

import pytest

from hangar.accounts.actors import Actor
from hangar.audit.models import ActorType
from hangar.conversations import selectors
from hangar.conversations.events import publish
from hangar.conversations.models import Session
from hangar.conversations.services import message_create, part_upsert, session_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def alices_session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="mine")


def test_bob_sees_sessions_of_his_org(bob, alices_session):
    assert selectors.session_get(bob.actor, alices_session.pk) == alices_session


def test_charlie_cannot_get_alices_session_even_naming_acme(charlie, alices_session):
    with pytest.raises(Session.DoesNotExist):
        selectors.session_get(charlie.actor, alices_session.pk)
    posing = Actor(type=ActorType.USER, org_id=alices_session.org_id, user=charlie.user)
    with pytest.raises(Session.DoesNotExist):
        selectors.session_get(posing, alices_session.pk)


def test_a_token_of_another_org_sees_nothing(alice, charlie, alices_session):
    crossed = Actor(type=ActorType.TOKEN, org_id=alice.org.pk, user=alice.user, token=charlie.token_row)
    assert not selectors.visible_sessions(crossed).exists()


def test_a_session_outside_the_named_project_is_not_found(alice, alices_session):
    with pytest.raises(Session.DoesNotExist):
        selectors.session_get(alice.actor, alices_session.pk, project_id=alice.project.pk + 999)


def test_sessions_list_excludes_archived_by_default(alice, alices_session):
    Session.objects.filter(pk=alices_session.pk).update(archived_at="2026-01-01T00:00:00Z")
    assert selectors.sessions_list(alice.actor, alice.project.pk) == []
    assert selectors.sessions_list(alice.actor, alice.project.pk, archived=None) == [alices_session]


def test_messages_list_keeps_the_most_recent_when_limited(alices_session):
    ids = []
    for _ in range(3):
        message = message_create(
            session=alices_session,
            data={
                "role": "user",
                "time": {"created": 1},
                "agent": "build",
                "model": {"providerID": "p", "modelID": "m"},
            },
        )
        part_upsert(message=message, data={"type": "text", "text": message.pk})
        ids.append(message.pk)
    assert [m["info"]["id"] for m in selectors.messages_list(alices_session)] == ids
    recent = selectors.messages_list(alices_session, limit=2)
    assert [m["info"]["id"] for m in recent] == ids[1:] and recent[1]["parts"][0]["text"] == ids[2]


def test_events_after_reads_ascending_with_a_limit(alices_session):
    for i in range(5):
        publish(alices_session, "test.tick", {"i": i})
    events = selectors.events_after(alices_session, 2, limit=3)
    assert [e["seq"] for e in events] == [3, 4, 5]
    assert selectors.events_after(alices_session.pk, 6) == []
