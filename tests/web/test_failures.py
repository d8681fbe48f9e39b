"""What the conversation shows when something fails: a command that exits non-zero is marked failed with
its exit code (never a green ✓), a call parked on a permission request says it waits for approval, and a
run that cannot start answers the prompt with its error, live and after a reload."""

import pytest

from tests.web.test_steering import bash, start_session, use_script

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_failing_command_shows_its_exit_code_and_a_waiting_one_says_it_waits_for_approval(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    use_script(
        alice,
        script,
        scripted_credential,
        [[bash("c1", "echo before; exit 3")], [{"text": "It failed."}]],
        permission_rules=[{"permission": "bash", "pattern": "*", "action": "ask"}],
    )
    app = open_app(alice)
    page = app.page
    start_session(app, alice, sessions_made, "try it")
    card = page.locator('[data-call-id="c1"]')
    card.and_(page.locator('[data-shown="waiting"]')).wait_for(timeout=60_000)
    assert "waiting for approval" in card.locator(".toolhead").inner_text()
    assert "running" not in card.locator(".toolhead").inner_text()

    page.get_by_role("alert", name="Permission request: bash").get_by_role(
        "button", name="Allow once"
    ).click()
    page.get_by_text("It failed.").wait_for(timeout=60_000)
    card.and_(page.locator('[data-shown="failed"]')).wait_for()
    head = card.locator(".toolhead").inner_text()
    assert "exit code 3" in head and "✓" not in head and "completed" not in head
    assert "before" in card.locator("pre.term").inner_text()
    app.shot("command-failed")


def test_a_run_that_cannot_start_answers_with_its_error_live_and_after_a_reload(
    alice, open_app, live_worker, sessions_made
):
    alice.project.default_model = "nobody-configured-this/some-model"  # no credential for its provider
    alice.project.save()
    app = open_app(alice)
    page = app.page
    start_session(app, alice, sessions_made, "hello")
    answer = page.locator("article.msg.assistant").get_by_test_id("turn-error")
    answer.wait_for(timeout=60_000)
    assert "no credential" in answer.inner_text()
    page.get_by_test_id("session-status").filter(has_text="idle").wait_for()
    assert page.get_by_text("no credential for provider").count() == 1  # told once, not twice

    page.reload()
    answer.wait_for()
    assert "no credential" in answer.inner_text()
    assert page.get_by_role("log", name="Conversation").locator("article.msg.assistant").count() == 1


def test_a_get_dropped_before_its_answer_is_sent_again_and_the_page_opens(alice, open_app):
    """A request the network drops (a reset keep-alive connection, a server restarting) is not the
    user's error: the app sends a GET again before it shows one (frontend/src/api/client.ts)."""
    from hangar.conversations.services import session_create

    session = session_create(actor=alice.actor, project=alice.project, title="Across a blip")
    app = open_app(alice)
    page = app.page
    sent: list[str] = []

    def drop_the_first(route):
        sent.append(route.request.method)
        if len(sent) == 1:
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route(f"**/api/orgs/acme/projects/{alice.project.pk}/sessions/{session.pk}/", drop_the_first)
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}")
    page.get_by_role("heading", name="Across a blip").wait_for()
    assert sent[:2] == ["GET", "GET"]
    assert page.get_by_text("Failed to fetch").count() == 0
