"""Requests waiting for a person show wherever the person is: a permission the agent asks in one session
appears as a notice in the top bar on another page, links to the session, and goes once answered.
Another org's member never sees it."""

import pytest

from hangar.conversations.models import PermissionRequest
from tests.web.test_steering import bash, start_session, use_script

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_permission_asked_elsewhere_shows_as_a_notice_that_leads_to_it(
    alice, charlie, open_app, script, scripted_credential, live_worker, sessions_made
):
    use_script(
        alice,
        script,
        scripted_credential,
        [[bash("c1", "echo from-afar")], [{"text": "Done afar."}]],
        permission_rules=[{"permission": "bash", "pattern": "*", "action": "ask"}],
    )
    outsider = open_app(charlie)
    outsider.page.goto("/o/globex")
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made, "run it")
    page.get_by_role("alert", name="Permission request: bash").wait_for(timeout=60_000)
    page.goto("/o/acme")  # away from the session
    page.get_by_role("heading", name="Projects").wait_for()
    notice = page.get_by_role("button", name="1 waiting for you")
    notice.click()
    listed = page.get_by_role("list", name="Waiting for you")
    link = listed.get_by_role("link", name="asks to run bash: echo from-afar")
    app.shot("notices")
    link.click()
    page.wait_for_url(f"**/s/{session_id}")
    assert listed.count() == 0  # the list closed on the way
    card = page.get_by_role("alert", name="Permission request: bash")
    card.get_by_role("button", name="Allow once").click()
    page.get_by_text("Done afar.").wait_for(timeout=60_000)
    notice.wait_for(state="detached")
    assert PermissionRequest.objects.get(session_id=session_id).status == "once"
    # charlie's page (another org, open the whole time) never showed it.
    assert outsider.page.get_by_test_id("notices").count() == 0
    assert "from-afar" not in outsider.page.content()
