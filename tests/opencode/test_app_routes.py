"""The routes OpenCode's own app and the SDK call beyond the TUI's (issue 30): `/global/health`, message
and part delete and part update, `/project` and `PATCH /project/{id}`, `/experimental/tool` and
`/experimental/tool/ids`, each in OpenCode 1.18.33's shape, each a 404 for another org."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, Message, Part, Session
from hangar.conversations.services import message_create, session_create
from tests.opencode.conftest import assert_matches, assert_response, base_url, response_schema

pytestmark = pytest.mark.django_db

TEXT = {"type": "text", "text": "first draft"}


@pytest.fixture
def session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="t")


def said(session, *texts: str) -> list[Message]:
    data = {
        "role": "user",
        "time": {"created": 1},
        "agent": "build",
        "model": {"providerID": "p", "modelID": "m"},
    }
    return [message_create(session=session, data=data, parts=[{**TEXT, "text": t}]) for t in texts]


def json_patch(client, url, body):
    return client.patch(url, body, format="json")


# --- /global/health ---------------------------------------------------------------------------------


def test_health_answers_in_opencodes_shape(oc, alice, charlie):
    answer = oc(alice).get(f"{base_url(alice)}/global/health")
    assert_response(answer, "/global/health")
    assert answer.json() == {"healthy": True, "version": "1.18.33"}
    assert oc(charlie).get(f"{base_url(alice)}/global/health").status_code == 404
    assert oc().get(f"{base_url(alice)}/global/health").status_code == 401


# --- message and part delete, part update -----------------------------------------------------------


def test_a_member_deletes_a_message_with_its_parts(oc, alice, session):
    first, second = said(session, "one", "two")
    url = f"{base_url(alice)}/session/{session.pk}/message/{first.pk}"
    deleted = oc(alice).delete(url)
    assert_response(deleted, "/session/{sessionID}/message/{messageID}", "delete")
    assert deleted.json() is True
    assert list(Message.objects.filter(session=session).values_list("pk", flat=True)) == [second.pk]
    assert not Part.objects.filter(message_id=first.pk).exists()
    event = Event.objects.filter(session=session, type="message.removed").get()
    assert event.payload == {"sessionID": session.pk, "messageID": first.pk}
    assert AuditEvent.objects.filter(action="session.message.delete").count() == 1
    assert oc(alice).delete(url).status_code == 404  # gone


def test_a_busy_session_refuses_history_edits_with_opencodes_409(oc, alice, session):
    (message,) = said(session, "one")
    Session.objects.filter(pk=session.pk).update(status="busy")
    refused = oc(alice).delete(f"{base_url(alice)}/session/{session.pk}/message/{message.pk}")
    assert refused.status_code == 409
    assert_matches(
        refused.json(), response_schema("/session/{sessionID}/message/{messageID}", "delete", "409")
    )
    assert Message.objects.filter(pk=message.pk).exists()


def test_a_text_part_is_edited_and_then_deleted(oc, alice, session):
    (message,) = said(session, "one")
    part = Part.objects.get(message=message)
    url = f"{base_url(alice)}/session/{session.pk}/message/{message.pk}/part/{part.pk}"
    edited = json_patch(oc(alice), url, {**part.data, "text": "second draft"})
    path = "/session/{sessionID}/message/{messageID}/part/{partID}"
    assert_response(edited, path, "patch")
    assert edited.json()["text"] == "second draft"
    assert Part.objects.get(pk=part.pk).data["text"] == "second draft"
    assert Event.objects.filter(session=session, type="message.part.updated").last().payload == {
        "part": edited.json()
    }
    # Only the text may change: another field, another id, or a non-text part is a 400 naming it.
    assert json_patch(oc(alice), url, {**part.data, "synthetic": True}).json()["data"]["errors"] == {
        "synthetic": ["Only text may change, not synthetic."]
    }
    assert json_patch(oc(alice), url, {**part.data, "id": "prt_other"}).status_code == 400
    assert json_patch(oc(alice), url, {**part.data, "text": 5}).status_code == 400
    assert Part.objects.get(pk=part.pk).data["text"] == "second draft"

    deleted = oc(alice).delete(url)
    assert_response(deleted, path, "delete")
    assert not Part.objects.filter(pk=part.pk).exists()
    assert Event.objects.filter(session=session, type="message.part.removed").get().payload == {
        "sessionID": session.pk,
        "messageID": message.pk,
        "partID": part.pk,
    }


def test_a_viewer_cannot_edit_history(oc, alice, session, acme):
    from hangar.accounts.models import Role
    from tests.conftest import make_persona

    viewer = make_persona("vera@acme.test", acme, Role.VIEWER, "rocket")
    (message,) = said(session, "one")
    assert (
        oc(viewer).delete(f"{base_url(alice)}/session/{session.pk}/message/{message.pk}").status_code == 403
    )
    assert Message.objects.filter(pk=message.pk).exists()


def test_history_edits_are_not_found_for_another_org(oc, alice, charlie, session):
    (message,) = said(session, "one")
    part = Part.objects.get(message=message)
    base = f"{base_url(alice)}/session/{session.pk}/message/{message.pk}"
    assert oc(charlie).delete(base).status_code == 404
    assert oc(charlie).delete(f"{base}/part/{part.pk}").status_code == 404
    assert json_patch(oc(charlie), f"{base}/part/{part.pk}", part.data).status_code == 404
    # charlie's own base URL does not reach alice's session either
    other = f"{base_url(charlie)}/session/{session.pk}/message/{message.pk}"
    assert oc(charlie).delete(other).status_code == 404
    assert Part.objects.filter(pk=part.pk).exists() and Message.objects.filter(pk=message.pk).exists()


# --- /project ---------------------------------------------------------------------------------------


def test_the_project_list_holds_the_base_urls_project(oc, alice, charlie):
    listed = oc(alice).get(f"{base_url(alice)}/project")
    assert_response(listed, "/project")
    assert [p["id"] for p in listed.json()] == [str(alice.project.pk)]
    assert oc(charlie).get(f"{base_url(alice)}/project").status_code == 404


def test_an_admin_renames_the_project_and_sets_its_start_script(oc, alice, bob):
    url = f"{base_url(alice)}/project/{alice.project.pk}"
    body = {"name": "Rocket II", "commands": {"start": "make deps"}}
    renamed = json_patch(oc(alice), url, body)
    assert_response(renamed, "/project/{projectID}", "patch")
    assert renamed.json()["name"] == "Rocket II" and "commands" not in renamed.json()
    alice.project.refresh_from_db()
    assert (alice.project.name, alice.project.setup_script) == ("Rocket II", "make deps")
    assert AuditEvent.objects.filter(action="project.update").count() == 1
    # a member is refused (403), an icon is a 400, another project id OpenCode's ProjectNotFoundError
    assert json_patch(oc(bob), url, {"name": "Mine"}).status_code == 403
    assert json_patch(oc(alice), url, {"icon": {"color": "red"}}).status_code == 400
    missing = json_patch(oc(alice), f"{base_url(alice)}/project/999999", {"name": "x"})
    assert missing.status_code == 404
    assert_matches(missing.json(), response_schema("/project/{projectID}", "patch", "404"))
    alice.project.refresh_from_db()
    assert alice.project.name == "Rocket II"


def test_project_update_is_not_found_for_another_org(oc, alice, charlie):
    url = f"{base_url(alice)}/project/{alice.project.pk}"
    assert json_patch(oc(charlie), url, {"name": "Taken"}).status_code == 404
    # nor through charlie's own base URL, naming alice's project
    assert (
        json_patch(oc(charlie), f"{base_url(charlie)}/project/{alice.project.pk}", {"name": "x"}).status_code
        == 404
    )
    alice.project.refresh_from_db()
    assert alice.project.name == "rocket"


# --- /experimental/tool -----------------------------------------------------------------------------


def test_the_tool_ids_and_the_tools_offered_on_a_model(oc, alice, charlie):
    ids = oc(alice).get(f"{base_url(alice)}/experimental/tool/ids")
    assert_response(ids, "/experimental/tool/ids")
    assert {"bash", "read", "edit", "apply_patch", "question", "skill", "invalid"} <= set(ids.json())
    tools = oc(alice).get(
        f"{base_url(alice)}/experimental/tool", {"provider": "anthropic", "model": "claude"}
    )
    assert_response(tools, "/experimental/tool")
    offered = {t["id"]: t for t in tools.json()}
    assert "edit" in offered and "apply_patch" not in offered and "invalid" not in offered
    assert offered["read"]["parameters"]["properties"]["filePath"]["type"] == "string"
    gpt = oc(alice).get(f"{base_url(alice)}/experimental/tool", {"provider": "openai", "model": "gpt-5"})
    assert "apply_patch" in {t["id"] for t in gpt.json()}
    missing = oc(alice).get(f"{base_url(alice)}/experimental/tool", {"provider": "openai"})
    assert missing.status_code == 400 and "model" in missing.json()["data"]["errors"]
    for route in ("/experimental/tool/ids", "/experimental/tool?provider=a&model=b"):
        assert oc(charlie).get(f"{base_url(alice)}{route}").status_code == 404
