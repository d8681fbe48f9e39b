"""A session's share link in a real browser (OpenCode's /share, kept inside the tenant's rules): a member of
the org opens the read-only view and sees the conversation live as it grows, masked, with no composer and
no terminal; another org's member and a reader not signed in get "not found"; where the org allows links,
anyone holding it opens it; once revoked the open page says it is gone. Screenshots at desktop and phone
width (var/screenshots/share-*)."""

import pytest
from playwright.sync_api import expect

from hangar.conversations import services as store
from hangar.conversations.services import session_create
from hangar.conversations.share_services import session_share, session_unshare

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = {"providerID": "scripted", "modelID": "m"}


def say(session, role: str, text: str) -> None:
    data = {"role": role, "time": {"created": 1}, "agent": "build", "model": MODEL}
    if role == "assistant":
        data = {
            "role": "assistant",
            "time": {"created": 2, "completed": 3},
            "parentID": session.messages.filter(role="user").order_by("-id").first().pk,
            "modelID": "m",
            "providerID": "scripted",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": "/workspace", "root": "/workspace"},
            "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "finish": "stop",
        }
    store.message_create(session=session, data=data, parts=[{"type": "text", "text": text}])


def test_a_share_link_opens_for_members_live_and_404s_for_others(alice, bob, charlie, open_app):
    session = session_create(actor=alice.actor, project=alice.project, title="Fix the parser", model=MODEL)
    say(session, "user", "Please fix the parser")
    say(session, "assistant", "Fixed it; the key sk-abcdefghijklmnopqrstuvwx is not shown.")
    session = session_share(actor=alice.actor, session=session)
    path = "/share/" + session.share["url"].rsplit("/share/", 1)[1]

    members_app = open_app(bob)
    page = members_app.page
    page.goto(path)
    view = page.get_by_test_id("share-view")
    expect(view.get_by_role("heading", name="Fix the parser")).to_be_visible()
    expect(view).to_contain_text("Please fix the parser")
    expect(view).to_contain_text("[redacted]")
    assert "sk-abcdefghij" not in view.inner_text()
    assert page.get_by_role("textbox").count() == 0  # no composer
    assert page.locator(".xterm, [data-testid=terminal]").count() == 0
    members_app.shot("share")
    say(session, "user", "And add a test")  # live: the open page shows what comes next
    expect(view).to_contain_text("And add a test", timeout=15_000)

    for other in (open_app(charlie).page, open_app().page):
        other.goto(path)
        expect(other.get_by_test_id("share-missing")).to_be_visible()
        assert "Fix the parser" not in other.content()

    alice.org.share_policy = "link"
    alice.org.save()
    session_unshare(actor=alice.actor, session=session)
    expect(page.get_by_test_id("share-missing")).to_be_visible(timeout=15_000)  # revoked: the open page
    session = session_share(actor=alice.actor, session=session)
    anyone = open_app().page
    anyone.goto("/share/" + session.share["url"].rsplit("/share/", 1)[1])
    expect(anyone.get_by_test_id("share-view")).to_contain_text("And add a test")
