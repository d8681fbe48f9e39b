"""Low (unbounded growth): message lists are paged. `/api` answers the most recent page (at most
MESSAGES_PAGE_MAX, `limit` to ask fewer) and, when older messages remain, the cursor for them in
`X-Next-Cursor` and a `Link: rel="next"`, which `before=<cursor>` follows. OpenCode's
`GET /session/{id}/message` honours `limit` and `before` as OpenCode 1.18.33 does: no limit (or 0) is
every message, a bad limit a 400, `before` without a limit a 400, the same headers."""

import pytest

from hangar.api.sessions_serializers import MESSAGES_PAGE_MAX
from hangar.conversations.models import Message
from hangar.conversations.services import message_create, session_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    return session_create(actor=alice.actor, project=alice.project, title="long")


def add_messages(session, count: int) -> list[str]:
    data = {
        "role": "user",
        "time": {"created": 1},
        "agent": "build",
        "model": {"providerID": "p", "modelID": "m"},
    }
    return [message_create(session=session, data=data).pk for _ in range(count)]


def api_url(persona, session) -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/messages/"


def ids(response) -> list[str]:
    return [row["info"]["id"] for row in response.json()]


def test_api_pages_backwards_with_a_cursor(api, alice, session):
    made = add_messages(session, 5)
    first = api(alice).get(api_url(alice, session) + "?limit=2")
    assert first.status_code == 200 and ids(first) == made[3:]
    assert first["X-Next-Cursor"] and 'rel="next"' in first["Link"]
    second = api(alice).get(api_url(alice, session) + f"?limit=2&before={first['X-Next-Cursor']}")
    assert ids(second) == made[1:3]
    last = api(alice).get(api_url(alice, session) + f"?limit=2&before={second['X-Next-Cursor']}")
    assert ids(last) == made[:1] and "X-Next-Cursor" not in last


def test_api_without_a_limit_answers_one_bounded_page(api, alice, session):
    made = add_messages(session, 3)
    Message.objects.bulk_create(
        [Message(session=session, role="user", data={"role": "user"}) for _ in range(MESSAGES_PAGE_MAX)]
    )
    page = api(alice).get(api_url(alice, session))
    assert len(page.json()) == MESSAGES_PAGE_MAX and page["X-Next-Cursor"]
    rest = api(alice).get(api_url(alice, session) + f"?before={page['X-Next-Cursor']}")
    assert ids(rest) == made and "X-Next-Cursor" not in rest


def test_api_refuses_a_limit_over_the_page_size(api, alice, session):
    response = api(alice).get(api_url(alice, session) + f"?limit={MESSAGES_PAGE_MAX + 1}")
    assert response.status_code == 400 and "limit" in response.json()["error"]["fields"]


def test_api_messages_of_another_org_are_404(api, alice, charlie, session):
    add_messages(session, 1)
    assert api(charlie).get(api_url(alice, session) + "?limit=1").status_code == 404
