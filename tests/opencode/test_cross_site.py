"""Low: a browser that once answered the Basic challenge of /oc/ sends those credentials with any request to
it, including a cross-site form post (form-urlencoded, multipart or text/plain, which can carry JSON).
Unsafe methods therefore need `Content-Type: application/json` (a cross-site page cannot send it without a
CORS preflight, which /oc/ never grants); a bodyless call, as the stock SDK sends for abort, is refused
only when a browser marks it as cross-site."""

import json

import pytest

from hangar.conversations.models import Message, Session
from hangar.conversations.services import session_create
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    alice.project.default_model = "openai/gpt-4o-mini"
    alice.project.save()
    return session_create(actor=alice.actor, project=alice.project, title="t")


def test_a_form_post_cannot_create_a_session(oc, alice):
    before = Session.objects.count()
    response = oc(alice).post(f"{base_url(alice)}/session", {"title": "pwned"})  # multipart, as a form
    assert response.status_code == 415
    response = oc(alice).post(
        f"{base_url(alice)}/session", "title=pwned", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415 and response.json()["name"] == "UnsupportedMediaType"
    assert Session.objects.count() == before


def test_a_text_plain_form_carrying_json_cannot_prompt(oc, alice, session):
    # <form enctype="text/plain"> with a field named '{"parts":[{"type":"text","text":"rm -rf' and the value
    # '"}],"noReply":true}' posts exactly this body (the form's "=" lands inside the text).
    body = json.dumps({"parts": [{"type": "text", "text": "rm -rf="}], "noReply": True})
    for path in ("message", "prompt_async"):
        response = oc(alice).post(
            f"{base_url(alice)}/session/{session.pk}/{path}", body, content_type="text/plain"
        )
        assert response.status_code == 415, (path, response.content[:300])
    assert not Message.objects.filter(session=session).exists()


def test_patch_and_delete_need_json_too(oc, alice, session):
    url = f"{base_url(alice)}/session/{session.pk}"
    assert (
        oc(alice).patch(url, "title=x", content_type="application/x-www-form-urlencoded").status_code == 415
    )
    assert oc(alice).delete(url, "x=1", content_type="text/plain").status_code == 415
    assert Session.objects.get(pk=session.pk).title == "t"


def test_a_bodyless_cross_site_post_cannot_abort(oc, alice, session):
    url = f"{base_url(alice)}/session/{session.pk}/abort"
    refused = oc(alice).post(url, HTTP_ORIGIN="https://evil.example", HTTP_SEC_FETCH_SITE="cross-site")
    assert refused.status_code == 403 and refused.json()["name"] == "ForbiddenError"


def test_the_stock_clients_calls_still_work(oc, alice, session):
    # The SDK sends JSON with its content type, and bodyless calls (abort) with none.
    created = oc(alice).post(f"{base_url(alice)}/session", {"title": "ok"}, format="json")
    assert created.status_code == 200
    charset = oc(alice).patch(
        f"{base_url(alice)}/session/{session.pk}",
        json.dumps({"title": "renamed"}),
        content_type="application/json; charset=utf-8",
    )
    assert charset.status_code == 200 and charset.json()["title"] == "renamed"
    assert oc(alice).post(f"{base_url(alice)}/session/{session.pk}/abort").status_code == 200
    noreply = oc(alice).post(
        f"{base_url(alice)}/session/{session.pk}/message",
        {"parts": [{"type": "text", "text": "hi"}], "noReply": True},
        format="json",
    )
    assert noreply.status_code == 200
