"""Oversized OpenCode fields are a 400 naming the field, never a 500 from the database."""

from unittest import mock

import pytest

from hangar.conversations.services import session_create
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db
HUGE = "x" * 5000


def test_oversized_session_and_prompt_fields_are_400s(oc, alice):
    client, base = oc(alice), base_url(alice)
    for body, field in (
        ({"title": HUGE}, "title"),
        ({"permission": [{"permission": HUGE, "pattern": "*", "action": "allow"}]}, "permission"),
        ({"permission": [{"permission": "bash", "pattern": HUGE, "action": "allow"}]}, "permission"),
    ):
        response = client.post(f"{base}/session", body, format="json")
        assert response.status_code == 400 and field in response.content.decode(), (
            body,
            response.status_code,
        )
    alice.project.default_model = "openai/gpt-4o-mini"
    alice.project.save()
    session = session_create(actor=alice.actor, project=alice.project, title="t")
    response = client.patch(f"{base}/session/{session.pk}", {"title": HUGE}, format="json")
    assert response.status_code == 400
    with mock.patch("hangar.engine.services.enqueue_run"):
        for extra in ({"model": {"providerID": HUGE, "modelID": "m"}}, {"agent": HUGE}):
            body = {"parts": [{"type": "text", "text": "hi"}], **extra}
            response = client.post(f"{base}/session/{session.pk}/prompt_async", body, format="json")
            assert response.status_code == 400, (extra, response.status_code)
