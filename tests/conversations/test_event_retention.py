"""Low (unbounded growth): a scheduled purge deletes old events of finished sessions, per the deployment's
retention (HANGAR_EVENT_RETENTION_DAYS), and a client resuming from a purged sequence number is told so
(HTTP 410 naming the first seq still kept; the WebSocket a `stream.events_purged` frame and close 4410),
never handed a silent gap."""

import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from hangar.conversations.events import publish
from hangar.conversations.models import Event, Session, SessionStatus
from hangar.conversations.retention_services import events_purge
from hangar.conversations.services import session_create
from hangar.schedule import BEAT_SCHEDULE
from tests.realtime.helpers import communicator


def session_with_events(persona, count: int, *, age_days: float) -> Session:
    session = session_create(actor=persona.actor, project=persona.project, title="old")
    for i in range(count):
        publish(session, "test.tick", {"i": i})
    then = timezone.now() - timedelta(days=age_days)
    Event.objects.filter(session=session).update(created_at=then)
    Session.objects.filter(pk=session.pk).update(created_at=then - timedelta(hours=1))
    return Session.objects.get(pk=session.pk)


def events_url(persona, session) -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/events/"


@pytest.mark.django_db
def test_old_events_of_finished_sessions_are_purged_and_others_kept(alice, settings):
    settings.HANGAR_EVENT_RETENTION_DAYS = 30
    old = session_with_events(alice, 4, age_days=40)  # seqs 1..5, all old
    busy = session_with_events(alice, 3, age_days=40)
    Session.objects.filter(pk=busy.pk).update(status=SessionStatus.BUSY)
    recent = session_with_events(alice, 3, age_days=1)
    result = events_purge()
    assert result["events"] == 5 and result["sessions"] == 1
    assert not Event.objects.filter(session=old).exists()
    assert Session.objects.get(pk=old.pk).events_purged_seq == 5
    assert Event.objects.filter(session=busy).count() == 4  # a running session keeps its history
    assert Event.objects.filter(session=recent).count() == 4
    # Numbering carries on after a purge: the next event is 6, never a reused number.
    assert publish(Session.objects.get(pk=old.pk), "test.tick", {"i": 9}).seq == 6


@pytest.mark.django_db
def test_retention_zero_keeps_everything(alice, settings):
    settings.HANGAR_EVENT_RETENTION_DAYS = 0
    session = session_with_events(alice, 2, age_days=4000)
    assert events_purge() == {"sessions": 0, "events": 0}
    assert Event.objects.filter(session=session).count() == 3


@pytest.mark.django_db
def test_the_purge_is_on_the_beat_schedule():
    assert any(entry["task"] == "hangar.engine.purge_events" for entry in BEAT_SCHEDULE.values())


@pytest.mark.django_db
def test_asking_after_a_purged_seq_is_a_410_naming_the_first_kept(api, alice, settings):
    settings.HANGAR_EVENT_RETENTION_DAYS = 30
    session = session_with_events(alice, 4, age_days=40)
    events_purge()
    publish(Session.objects.get(pk=session.pk), "test.tick", {"i": 9})  # seq 6
    gone = api(alice).get(events_url(alice, session) + "?after=2")
    assert gone.status_code == 410
    body = gone.json()["error"]
    assert body["code"] == "events_purged" and body["purged_through"] == 5 and body["last_seq"] == 6
    kept = api(alice).get(events_url(alice, session) + "?after=5").json()
    assert [e["seq"] for e in kept["events"]] == [6] and kept["last_seq"] == 6
    # The cursor a fresh client takes (after a huge seq) still works.
    assert api(alice).get(events_url(alice, session) + "?after=999999999999&limit=1").status_code == 200


@pytest.mark.django_db
def test_a_purged_seq_is_a_410_even_when_nothing_is_left(api, alice, charlie, settings):
    settings.HANGAR_EVENT_RETENTION_DAYS = 30
    session = session_with_events(alice, 2, age_days=40)
    events_purge()
    assert api(alice).get(events_url(alice, session) + "?after=0").status_code == 410
    assert api(alice).get(events_url(alice, session) + "?after=3").json()["events"] == []
    # Another org still gets a 404, purged or not.
    assert api(charlie).get(events_url(alice, session) + "?after=0").status_code == 404


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_websocket_resuming_from_a_purged_seq_is_told_and_closed(alice, settings):
    settings.HANGAR_EVENT_RETENTION_DAYS = 30
    session = await sync_to_async(session_with_events)(alice, 3, age_days=40)
    await sync_to_async(events_purge)()
    comm = communicator(f"/ws/sessions/{session.pk}/?after=1", token=alice.token)
    assert (await comm.connect())[0]
    frame = json.loads(await comm.receive_from(timeout=5))
    assert frame == {"type": "stream.events_purged", "payload": {"purged_through": 4, "last_seq": 4}}
    closed = await comm.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4410}
    await comm.disconnect()
