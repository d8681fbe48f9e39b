"""Manual compaction: OpenCode's POST /session/{id}/summarize and /api's .../summarize/. Both store a
compaction request (a user message with a `compaction` part), audit it and start the run; a foreign session
is a 404 on either; a bad body is a 400 naming the field. End to end, the worker compacts the history and
the messages read back in OpenCode's shapes."""

from unittest import mock

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, Message, Part, Session
from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_prompt, wait_idle
from tests.opencode.conftest import assert_matches, assert_response, base_url, schema_of

MODEL = {"providerID": "openai", "modelID": "gpt-4o-mini"}


def oc_url(persona, session) -> str:
    return f"{base_url(persona)}/session/{session.pk}/summarize"


def api_url(persona, session) -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/summarize/"


@pytest.fixture
def alices_session(alice):
    alice.project.default_model = "openai/gpt-4o-mini"
    alice.project.save()
    return session_create(actor=alice.actor, project=alice.project, title="t")


@pytest.fixture
def no_enqueue():
    with mock.patch("hangar.engine.services.enqueue_run") as enqueue:
        yield enqueue


def compaction_parts(session) -> list[dict]:
    return [p.data for p in Part.objects.filter(session=session, type="compaction").order_by("id")]


@pytest.mark.django_db
def test_summarize_stores_a_compaction_request_audits_and_starts_the_run(
    oc, alice, alices_session, no_enqueue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = oc(alice).post(oc_url(alice, alices_session), MODEL, format="json")
    assert_response(response, "/session/{sessionID}/summarize", "post")
    assert response.json() is True
    [part] = compaction_parts(alices_session)
    assert_matches(part, schema_of("CompactionPart"))
    assert part["auto"] is False
    message = Message.objects.get(pk=part["messageID"])
    assert message.data["model"] == MODEL and message.data["agent"] == "build"
    assert AuditEvent.objects.filter(action="session.summarize", target_id=alices_session.pk).count() == 1
    session = Session.objects.get(pk=alices_session.pk)
    assert session.status == "busy" and session.run_requested
    no_enqueue.assert_called_once_with(alices_session.pk)


@pytest.mark.django_db
def test_summarize_through_the_api_takes_the_sessions_model_and_auto(api, alice, alices_session, no_enqueue):
    response = api(alice).post(api_url(alice, alices_session), {"auto": True}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["queued"] is False
    [part] = compaction_parts(alices_session)
    assert part["auto"] is True and part["messageID"] == response.json()["message"]
    assert Message.objects.get(pk=part["messageID"]).data["model"] == MODEL


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body,field",
    [
        ({"modelID": "m"}, "providerID"),
        ({**MODEL, "extra": 1}, "extra"),
        ({**MODEL, "auto": "maybe"}, "auto"),
    ],
)
def test_a_bad_opencode_body_is_a_400_naming_the_field(oc, alice, alices_session, no_enqueue, body, field):
    response = oc(alice).post(oc_url(alice, alices_session), body, format="json")
    assert response.status_code == 400 and field in response.json()["data"]["errors"]
    assert compaction_parts(alices_session) == []


@pytest.mark.django_db
def test_a_bad_api_model_is_a_400_naming_the_field(api, alice, alices_session, no_enqueue):
    response = api(alice).post(api_url(alice, alices_session), {"model": "no-slash"}, format="json")
    assert response.status_code == 400 and "model" in response.content.decode()
    assert compaction_parts(alices_session) == []


@pytest.mark.django_db
def test_bob_of_the_same_org_may_summarize_and_charlie_gets_404_everywhere(
    oc, api, alice, bob, charlie, alices_session, no_enqueue
):
    assert oc(bob).post(oc_url(alice, alices_session), MODEL, format="json").status_code == 200
    for client_base in (base_url(alice), base_url(charlie)):
        response = oc(charlie).post(
            f"{client_base}/session/{alices_session.pk}/summarize", MODEL, format="json"
        )
        assert response.status_code == 404
    for org, project in (("acme", alice.project.pk), ("globex", charlie.project.pk)):
        url = f"/api/orgs/{org}/projects/{project}/sessions/{alices_session.pk}/summarize/"
        assert api(charlie).post(url, {}, format="json").status_code == 404
    assert len(compaction_parts(alices_session)) == 1  # bob's only


@pytest.mark.django_db(transaction=True)
def test_the_worker_compacts_and_the_messages_read_back_in_opencodes_shapes(
    oc, alice, script, make_session, worker
):
    script_id = script.load(
        [
            [{"text": "I looked at the code."}],
            [
                {"text": "**Goal**: look at the code\n**Accomplished**: looked"},
                {"usage": {"completion_tokens": 40}},
            ],
        ],
        shared=True,
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("look at the code"))
    session = wait_idle(session)

    response = oc(alice).post(
        oc_url(alice, session), {"providerID": "scripted", "modelID": script_id}, format="json"
    )
    assert response.status_code == 200
    session = wait_idle(session)

    listed = oc(alice).get(f"{base_url(alice)}/session/{session.pk}/message")
    assert_response(listed, "/session/{sessionID}/message")
    messages = listed.json()
    request, summary = messages[-2], messages[-1]
    assert [p["type"] for p in request["parts"]] == ["compaction"]
    assert summary["info"]["summary"] is True and summary["info"]["agent"] == "compaction"
    assert summary["info"]["tokens"]["output"] == 40
    assert "**Goal**" in "".join(p.get("text", "") for p in summary["parts"])
    assert [e.payload for e in Event.objects.filter(session=session, type="session.compacted")] == [
        {"sessionID": session.pk}
    ]
