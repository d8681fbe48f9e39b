"""/api/orgs/<org>/pending/: what waits for a person across the org's sessions (the web app's notice).
Pending permission and question requests of every project with their session, settled ones gone, another
org's never listed (and its slug a 404), an auditor is refused; the requests' events reach the org stream."""

import pytest

from hangar.accounts.models import Role
from hangar.conversations import events
from hangar.conversations.models import Event
from hangar.conversations.permission_services import permission_request_create
from hangar.conversations.services import session_create
from hangar.projects.models import Project
from tests.conftest import make_persona

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_enqueue")]


def ask_permission(session, command="rm -rf build"):
    return permission_request_create(
        session=session, permission="bash", patterns=[command], always=["rm *"], metadata={"command": command}
    )


def test_the_org_lists_pending_requests_of_every_project_with_their_session(api, alice, bob, asked):
    other = Project.objects.create(org=alice.org, slug="other", name="other")
    elsewhere = session_create(actor=alice.actor, project=other, title="Elsewhere")
    permission = ask_permission(elsewhere)
    answered = ask_permission(elsewhere, "echo done")
    answered.status = "once"
    answered.save()

    response = api(bob).get("/api/orgs/acme/pending/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert [p["id"] for p in body["permissions"]] == [permission.pk]
    assert body["permissions"][0]["metadata"] == {"command": "rm -rf build"}
    assert body["permissions"][0]["session"] == {
        "id": elsewhere.pk,
        "title": "Elsewhere",
        "project": other.pk,
    }
    assert [q["id"] for q in body["questions"]] == [asked.pk]
    assert body["questions"][0]["session"]["project"] == alice.project.pk
    assert len(body["questions"][0]["questions"]) == 2


def test_another_orgs_requests_are_never_listed(api, alice, charlie, asked):
    ask_permission(session_create(actor=alice.actor, project=alice.project, title="secret"))
    assert api(charlie).get("/api/orgs/globex/pending/").json() == {"permissions": [], "questions": []}
    assert api(charlie).get("/api/orgs/acme/pending/").status_code == 404
    assert api().get("/api/orgs/acme/pending/").status_code in (401, 403)


def test_an_auditor_may_not_read_sessions_requests(api, alice, asked):
    auditor = make_persona("audrey@acme.test", alice.org, Role.AUDITOR, "rocket")
    response = api(auditor).get("/api/orgs/acme/pending/")
    assert response.status_code == 403 and "questions" not in response.json()


def test_request_events_reach_the_org_stream_and_others_do_not(
    alice, monkeypatch, django_capture_on_commit_callbacks
):
    sent: list[tuple[list[str], list[str]]] = []

    class Sink:
        def broadcast_many(self, groups, messages):
            sent.append((groups, [m["type"] for m in messages]))

    monkeypatch.setattr(events, "_sink", Sink())
    session = session_create(actor=alice.actor, project=alice.project, title="t")
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        ask_permission(session)
        events.publish(session, "todo.updated", {"sessionID": session.pk, "todos": []})
    org = events.org_group(alice.org.pk)
    assert [(org in groups, types) for groups, types in sent] == [
        (True, ["permission.asked"]),
        (False, ["todo.updated"]),
    ]
    assert Event.objects.filter(session=session, type="permission.asked").count() == 1
