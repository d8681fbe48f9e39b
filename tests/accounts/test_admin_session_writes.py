"""An admin edit of a session writes only what the form changed, through the session services: it can
neither regress the session's event sequence (it could never publish again) nor undo an abort."""

from django.contrib.admin.sites import site
from django.test import RequestFactory

from hangar.accounts.models import User
from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, Session
from hangar.conversations.services import session_create


def test_an_admin_title_edit_keeps_what_the_engine_wrote_meanwhile(alice):
    session = session_create(actor=alice.actor, project=alice.project, title="old")
    root = User.objects.create_superuser("root@hangar.test", "pw")
    request = RequestFactory().post("/admin/")
    request.user = root
    admin = site._registry[Session]
    stale = Session.objects.get(pk=session.pk)  # what the admin form was built from
    Session.objects.filter(pk=session.pk).update(event_seq=50, abort_requested=True, status="busy")

    form_class = admin.get_form(request, stale, change=True)
    data = {name: getattr(stale, name) for name in form_class.base_fields}
    data["title"] = "renamed by an admin"
    form = form_class(data=data, instance=stale)
    assert form.is_valid(), form.errors
    admin.save_model(request, form.save(commit=False), form, change=True)

    row = Session.objects.get(pk=session.pk)
    assert row.title == "renamed by an admin"
    assert row.event_seq > 50 and row.abort_requested and row.status == "busy"
    assert Event.objects.filter(session=row, type="session.updated").exists()
    assert AuditEvent.objects.filter(action="session.update", target_id=session.pk).exists()
