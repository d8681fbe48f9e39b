"""Beat's sweep (hangar.engine.agents.headless.permission_expire_due) expires what no eta task was sent for: a
request past its expiry becomes a reject telling the model why, audited, its session flagged for a run;
one not yet due, one without an expiry and one already answered are left alone."""

from datetime import timedelta

import pytest
from django.utils import timezone

from hangar.audit.models import AuditEvent
from hangar.conversations.models import PermissionRequest, Session
from hangar.conversations.services import session_create
from hangar.engine.agents.headless import ETA_MAX_S, permission_expire_due

pytestmark = pytest.mark.django_db


def test_the_sweep_expires_only_pending_requests_past_their_time(alice):
    session = session_create(actor=alice.actor, project=alice.project, title="slack run", source="slack")
    now = timezone.now()

    def ask(**fields):
        return PermissionRequest.objects.create(
            session=session, permission="bash", patterns=["make"], **fields
        )

    due = ask(expires_at=now - timedelta(seconds=1), approvers=[alice.user.pk])
    later = ask(expires_at=now + timedelta(seconds=ETA_MAX_S * 10))
    never = ask()
    answered = ask(expires_at=now - timedelta(seconds=5), status="once")

    assert permission_expire_due() == 1
    assert permission_expire_due() == 0  # twice is harmless

    due.refresh_from_db()
    assert due.status == "reject" and "expired" in due.reply_message and due.replied_at is not None
    assert [r.status for r in PermissionRequest.objects.filter(pk__in=[later.pk, never.pk, answered.pk])] == [
        "pending",
        "pending",
        "once",
    ]
    audit = AuditEvent.objects.get(action="permission.expired")
    assert audit.target_id == due.pk and audit.data["approvers"] == [alice.user.pk]
    assert Session.objects.get(pk=session.pk).run_requested is True
