"""OpenCode's `GET /session/{id}/message` honours `limit` and `before` as OpenCode 1.18.33 does: no limit (or
0) is every message, a bad limit or a `before` without a limit a 400; a page with older messages left
names them in `X-Next-Cursor` and `Link: rel="next"` (exposed to browsers)."""

import pytest

from hangar.conversations.services import session_create
from tests.api.test_message_pages import add_messages, ids
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="long")


def test_opencode_limit_and_before_page_as_opencode_does(oc, alice, session):
    made = add_messages(session, 5)
    url = f"{base_url(alice)}/session/{session.pk}/message"
    every = oc(alice).get(url)
    assert ids(every) == made and "X-Next-Cursor" not in every
    assert ids(oc(alice).get(url + "?limit=0")) == made
    page = oc(alice).get(url + "?limit=2")
    assert ids(page) == made[3:] and page["X-Next-Cursor"]
    assert f"before={page['X-Next-Cursor']}" in page["Link"] and "limit=2" in page["Link"]
    assert "X-Next-Cursor" in page["Access-Control-Expose-Headers"]
    older = oc(alice).get(url + f"?limit=2&before={page['X-Next-Cursor']}")
    assert ids(older) == made[1:3]


@pytest.mark.parametrize("query", ["?limit=abc", "?limit=-1", "?before=msg_x"])
def test_opencode_refuses_a_bad_limit_or_a_before_without_one(oc, alice, session, query):
    response = oc(alice).get(f"{base_url(alice)}/session/{session.pk}/message{query}")
    assert response.status_code == 400 and response.json()["name"] == "BadRequestError"
