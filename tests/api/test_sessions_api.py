"""The sessions REST API: each persona, filters, lifecycle, messages, events, and a cross-tenant 404 per route."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.events import publish
from hangar.conversations.models import Event, Session
from hangar.conversations.services import message_create, part_upsert, session_create

pytestmark = pytest.mark.django_db


def sessions_url(persona, suffix: str = "") -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{suffix}"


def session_url(persona, session, suffix: str = "") -> str:
    return sessions_url(persona, f"{session.pk}/{suffix}")


@pytest.fixture
def alices_session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="Fix the login bug")


# --- create ---------------------------------------------------------------------------------------


def test_alice_creates_a_session_and_gets_opencode_json_with_hangar_fields(api, alice):
    response = api(alice).post(
        sessions_url(alice), {"title": "Plan", "agent": "plan", "model": "openai/gpt-x"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("ses_") and body["title"] == "Plan" and body["agent"] == "plan"
    assert body["model"] == {"id": "gpt-x", "providerID": "openai"}
    assert body["projectID"] == str(alice.project.pk) and body["project"] == alice.project.pk
    assert body["org"] == "acme" and body["status"] == {"type": "idle"}
    assert set(body["time"]) == {"created", "updated"}
    assert AuditEvent.objects.filter(action="session.create", target_id=body["id"]).exists()
    assert Event.objects.get(session_id=body["id"], seq=1).type == "session.created"


def test_bob_as_a_member_creates_a_session(api, bob):
    assert api(bob).post(sessions_url(bob), {}, format="json").status_code == 201


def test_a_viewer_cannot_create_a_session_but_can_list_them(api, dave, alices_session):
    assert api(dave).post(sessions_url(dave), {"title": "x"}, format="json").status_code == 403
    listed = api(dave).get(sessions_url(dave))
    assert listed.status_code == 200 and [s["id"] for s in listed.json()["items"]] == [alices_session.pk]


def test_a_malformed_body_is_a_400_naming_each_field(api, alice):
    response = api(alice).post(
        sessions_url(alice), {"title": "t" * 201, "model": "no-slash", "agent": "a b"}, format="json"
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"title", "model", "agent"}


def test_a_parent_from_another_org_is_a_400_naming_parent(api, alice, charlie):
    foreign = session_create(actor=charlie.actor, project=charlie.project)
    response = api(alice).post(sessions_url(alice), {"parent": foreign.pk}, format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["parent"]


def test_a_child_session_is_listed_under_its_parent(api, alice, alices_session):
    child = api(alice).post(sessions_url(alice), {"parent": alices_session.pk}, format="json").json()
    assert child["parentID"] == alices_session.pk
    children = api(alice).get(session_url(alice, alices_session, "children/")).json()
    assert [c["id"] for c in children] == [child["id"]]
    roots = api(alice).get(sessions_url(alice), {"roots": "true"}).json()["items"]
    assert [s["id"] for s in roots] == [alices_session.pk]
    under = api(alice).get(sessions_url(alice), {"parent": alices_session.pk}).json()["items"]
    assert [s["id"] for s in under] == [child["id"]]


# --- list -----------------------------------------------------------------------------------------


def test_the_list_is_newest_first_and_pages_by_cursor(api, alice):
    made = [session_create(actor=alice.actor, project=alice.project, title=f"s{i}").pk for i in range(5)]
    first = api(alice).get(sessions_url(alice), {"limit": 2}).json()
    assert [s["id"] for s in first["items"]] == made[::-1][:2]
    second = api(alice).get(sessions_url(alice), {"limit": 2, "cursor": first["next_cursor"]}).json()
    third = api(alice).get(sessions_url(alice), {"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [s["id"] for s in second["items"] + third["items"]] == made[::-1][2:]
    assert third["next_cursor"] is None


def test_the_list_filters_by_title_search_and_updated_since(api, alice, alices_session):
    session_create(actor=alice.actor, project=alice.project, title="Write docs")
    found = api(alice).get(sessions_url(alice), {"search": "LOGIN"}).json()["items"]
    assert [s["id"] for s in found] == [alices_session.pk]
    later = api(alice).get(sessions_url(alice), {"updated_since": "2999-01-01T00:00:00Z"}).json()["items"]
    assert later == []


def test_a_bad_list_filter_is_a_400_naming_it(api, alice):
    response = api(alice).get(sessions_url(alice), {"limit": 0, "archived": "maybe"})
    assert response.status_code == 400 and set(response.json()["error"]["fields"]) == {"limit", "archived"}


def test_the_list_never_shows_another_orgs_sessions(api, alice, charlie, alices_session):
    session_create(actor=charlie.actor, project=charlie.project)
    assert [s["id"] for s in api(alice).get(sessions_url(alice)).json()["items"]] == [alices_session.pk]


# --- get, rename, archive, delete -------------------------------------------------------------------


def test_bob_reads_alices_session(api, bob, alices_session):
    response = api(bob).get(session_url(bob, alices_session))
    assert response.status_code == 200 and response.json()["title"] == "Fix the login bug"


def test_renaming_is_audited_and_published_org_wide(api, bob, alices_session):
    response = api(bob).patch(session_url(bob, alices_session), {"title": "Login fixed"}, format="json")
    assert response.status_code == 200 and response.json()["title"] == "Login fixed"
    audit = AuditEvent.objects.get(action="session.update", target_id=alices_session.pk)
    assert audit.data == {"title": {"from": "Fix the login bug", "to": "Login fixed"}}
    event = Event.objects.filter(session=alices_session).order_by("-seq").first()
    assert event.type == "session.updated" and event.payload["info"]["title"] == "Login fixed"


def test_renaming_without_a_title_is_a_400_naming_title(api, alice, alices_session):
    response = api(alice).patch(session_url(alice, alices_session), {}, format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["title"]


def test_a_viewer_cannot_rename_archive_or_delete(api, dave, alices_session):
    client = api(dave)
    assert client.patch(session_url(dave, alices_session), {"title": "x"}, format="json").status_code == 403
    assert client.post(session_url(dave, alices_session, "archive/")).status_code == 403
    assert client.delete(session_url(dave, alices_session)).status_code == 403


def test_archiving_hides_the_session_from_the_default_list_and_unarchiving_restores_it(
    api, alice, alices_session
):
    archived = api(alice).post(session_url(alice, alices_session, "archive/")).json()
    assert "archived" in archived["time"]
    assert api(alice).get(sessions_url(alice)).json()["items"] == []
    only_archived = api(alice).get(sessions_url(alice), {"archived": "true"}).json()["items"]
    assert [s["id"] for s in only_archived] == [alices_session.pk]
    restored = api(alice).post(session_url(alice, alices_session, "unarchive/")).json()
    assert "archived" not in restored["time"]
    actions = list(
        AuditEvent.objects.filter(target_id=alices_session.pk).order_by("id").values_list("action", flat=True)
    )
    assert actions == ["session.create", "session.archive", "session.unarchive"]


def test_bob_cannot_delete_alices_session_but_may_delete_his_own(api, bob, alices_session):
    assert api(bob).delete(session_url(bob, alices_session)).status_code == 403
    own = session_create(actor=bob.actor, project=bob.project)
    assert api(bob).delete(session_url(bob, own)).status_code == 204
    assert not Session.objects.filter(pk=own.pk).exists()


def test_alice_as_owner_deletes_a_session_with_its_children(api, alice, alices_session):
    child = session_create(actor=alice.actor, project=alice.project, parent=alices_session)
    assert api(alice).delete(session_url(alice, alices_session)).status_code == 204
    assert not Session.objects.filter(pk__in=[alices_session.pk, child.pk]).exists()
    assert api(alice).get(session_url(alice, alices_session)).status_code == 404
    assert AuditEvent.objects.get(action="session.delete").data["children"] == [child.pk]


# --- messages and events -------------------------------------------------------------------------


def add_exchange(session):
    message = message_create(
        session=session,
        data={
            "role": "user",
            "time": {"created": 1},
            "agent": "build",
            "model": {"providerID": "p", "modelID": "m"},
        },
    )
    part_upsert(message=message, data={"type": "text", "text": "hello"})
    return message


def test_messages_are_listed_as_info_and_parts_and_fetched_one_by_one(api, bob, alices_session):
    message = add_exchange(alices_session)
    listed = api(bob).get(session_url(bob, alices_session, "messages/")).json()
    assert [m["info"]["id"] for m in listed] == [message.pk]
    assert listed[0]["parts"][0]["text"] == "hello"
    one = api(bob).get(session_url(bob, alices_session, f"messages/{message.pk}/"))
    assert one.status_code == 200 and one.json() == listed[0]
    assert api(bob).get(session_url(bob, alices_session, "messages/msg_nope/")).status_code == 404


def test_events_after_a_sequence_number_fill_a_gap(api, alice, alices_session):
    for i in range(4):
        publish(alices_session, "test.tick", {"i": i})
    body = api(alice).get(session_url(alice, alices_session, "events/"), {"after": 2, "limit": 2}).json()
    assert [e["seq"] for e in body["events"]] == [3, 4] and body["last_seq"] == 5
    assert body["events"][0] == {
        "seq": 3,
        "type": "test.tick",
        "payload": {"i": 1},
        "session": alices_session.pk,
    }
    bad = api(alice).get(session_url(alice, alices_session, "events/"), {"after": -1})
    assert bad.status_code == 400 and list(bad.json()["error"]["fields"]) == ["after"]


# --- tenancy ---------------------------------------------------------------------------------------

ROUTES = [
    ("get", ""),
    ("patch", ""),
    ("delete", ""),
    ("post", "archive/"),
    ("post", "unarchive/"),
    ("get", "children/"),
    ("get", "messages/"),
    ("get", "messages/{message}/"),
    ("get", "events/"),
]


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
def test_charlie_gets_a_404_on_every_route_of_alices_session(
    api, alice, charlie, alices_session, method, suffix
):
    message = add_exchange(alices_session)
    path = session_url(alice, alices_session, suffix.format(message=message.pk))
    response = getattr(api(charlie), method)(path, {"title": "x"}, format="json")
    assert response.status_code == 404, (method, path, response.status_code)
    # Through his own org and project the session does not exist either.
    mine = session_url(charlie, alices_session, suffix.format(message=message.pk))
    assert getattr(api(charlie), method)(mine, {"title": "x"}, format="json").status_code == 404


def test_charlie_gets_a_404_listing_or_creating_in_alices_project(api, alice, charlie):
    assert api(charlie).get(sessions_url(alice)).status_code == 404
    assert api(charlie).post(sessions_url(alice), {}, format="json").status_code == 404


def test_alices_project_under_charlies_org_is_a_404(api, alice, charlie):
    url = f"/api/orgs/{charlie.org.slug}/projects/{alice.project.pk}/sessions/"
    assert api(charlie).get(url).status_code == 404


def test_an_anonymous_caller_is_a_401(api, alice, alices_session):
    assert api().get(sessions_url(alice)).status_code == 401
    assert api().get(session_url(alice, alices_session)).status_code == 401
