"""Session lifecycle services: audited, published org-wide, idempotent archive."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event
from hangar.conversations.services import session_create
from hangar.conversations.session_services import (
    session_archive,
    session_delete,
    session_title_generated,
    session_update,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def alices_session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="mine")


def test_rename_writes_an_audit_row_and_a_session_updated_event(alice, alices_session):
    session_update(actor=alice.actor, session=alices_session, title="new")
    assert AuditEvent.objects.filter(action="session.update", target_id=alices_session.pk).count() == 1
    event = Event.objects.get(session=alices_session, seq=2)
    assert event.type == "session.updated"
    assert event.payload["sessionID"] == alices_session.pk and event.payload["info"]["title"] == "new"


def test_archiving_twice_records_and_publishes_once(alice, alices_session):
    session_archive(actor=alice.actor, session=alices_session)
    session_archive(actor=alice.actor, session=alices_session)
    assert AuditEvent.objects.filter(action="session.archive").count() == 1
    assert Event.objects.filter(session=alices_session, type="session.updated").count() == 1


def test_delete_is_audited_and_removes_the_event_log(alice, alices_session):
    session_delete(actor=alice.actor, session=alices_session)
    assert AuditEvent.objects.get(action="session.delete").target_id == alices_session.pk
    assert not Event.objects.filter(session_id=alices_session.pk).exists()


def test_a_generated_title_names_an_untitled_session_but_never_overrides_a_person(alice):
    untitled = session_create(actor=alice.actor, project=alice.project)
    assert session_title_generated(session=untitled, title="Fix the login bug")
    untitled.refresh_from_db()
    assert untitled.title == "Fix the login bug"
    event = Event.objects.filter(session=untitled, type="session.updated").last()
    assert event.payload["sessionID"] == untitled.pk and event.payload["info"]["title"] == "Fix the login bug"

    renamed = session_create(actor=alice.actor, project=alice.project)
    session_update(actor=alice.actor, session=renamed, title="Alice's name")
    assert not session_title_generated(session=renamed, title="Generated")
    renamed.refresh_from_db()
    assert renamed.title == "Alice's name"
