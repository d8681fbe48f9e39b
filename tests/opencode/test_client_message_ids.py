"""A client-chosen messageID must not decide message order: it must be OpenCode's format, newer than the
session's last message and not from the future; anything else is a 400 (never a 500)."""

from unittest import mock

import pytest

from hangar.conversations.models import Message
from hangar.conversations.services import session_create
from hangar.ids import new_message_id
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    alice.project.default_model = "openai/gpt-4o-mini"
    alice.project.save()
    return session_create(actor=alice.actor, project=alice.project, title="t")


def prompt(client, persona, session, message_id):
    body = {"parts": [{"type": "text", "text": "hi"}], "messageID": message_id}
    with mock.patch("hangar.engine.services.enqueue_run"):
        return client.post(f"{base_url(persona)}/session/{session.pk}/prompt_async", body, format="json")


def test_a_fresh_client_message_id_is_accepted(oc, alice, session):
    message_id = new_message_id()
    assert prompt(oc(alice), alice, session, message_id).status_code == 204
    assert Message.objects.filter(pk=message_id, session=session).exists()


@pytest.mark.parametrize(
    "message_id",
    [
        "msg_" + "z" * 26,  # sorts after every real id: the loop would never see its own answers as newer
        "msg_ffffffffffff" + "A" * 14,  # well-formed but from the far future
        "msg_" + "0" * 12 + "A" * 14,  # older than the session's messages: silently ignored before
        "msg_" + "a" * 60,  # longer than the column: a 500 before
        "msg_short",
        "msg_0123456789ab!!!!!!!!!!!!!!",
    ],
)
def test_a_malformed_future_or_older_message_id_is_a_400(oc, alice, session, message_id):
    assert prompt(oc(alice), alice, session, new_message_id()).status_code == 204
    response = prompt(oc(alice), alice, session, message_id)
    assert response.status_code == 400, (response.status_code, response.content[:200])
    assert Message.objects.filter(session=session).count() == 1
