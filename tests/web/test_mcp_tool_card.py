"""An MCP tool's card in a real browser, from a real run (issue 27): the scripted model calls the `add` and
`fail` tools of the SDK test server (tests/engine/mcp_server.py) through the real worker, and the session
page shows each call as an MCP card naming the server and the tool, with its arguments, its result or its
error, and its latency; the token the server's header carries is nowhere on the page. Screenshots at
desktop and phone width (var/screenshots/mcp-tool-card-*)."""

import re

import pytest
from playwright.sync_api import expect

from tests.engine.test_mcp_tools import TOKEN, McpServer, call, configure

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


@pytest.fixture
def mcp_server():
    server = McpServer()
    yield server
    server.stop()


def test_a_runs_mcp_calls_show_as_cards_naming_server_tool_arguments_result_and_latency(
    alice, open_app, script, scripted_credential, live_worker, sessions_made, mcp_server
):
    scripted_credential(alice)
    script_id = script.load(
        [
            [{"text": "Adding."}, call("c1", "tools_add", a=2, b=40)],
            [call("c2", "tools_fail")],
            [{"text": "The sum is 42; the other tool failed."}],
        ]
    )
    alice.project.default_model = f"scripted/{script_id}"
    alice.project.save()
    configure(alice, mcp_server)  # after the save above, which writes every field of the project
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}")
    page.get_by_role("button", name="New session").click()
    page.wait_for_url("**/s/ses_*")
    sessions_made.append(page.url.rsplit("/s/", 1)[1])
    page.get_by_role("textbox", name="Message").fill("add 2 and 40 with the MCP tool")
    page.get_by_role("textbox", name="Message").press("Enter")
    page.get_by_text("The sum is 42; the other tool failed.").wait_for(timeout=90_000)

    add = page.locator('[data-call-id="c1"]')
    expect(add).to_have_attribute("data-mcp-server", "tools")
    expect(add).to_have_attribute("data-shown", "completed")
    expect(add.locator(".toolname")).to_have_text("tools")
    expect(add.locator(".tooltitle")).to_have_text("add")
    facts = add.get_by_role("definition")
    expect(facts.nth(0)).to_have_text("tools")
    expect(facts.nth(1)).to_have_text("add")
    latency = add.locator("dt", has_text="Latency").locator("xpath=following-sibling::dd").inner_text()
    assert re.fullmatch(r"\d+ ms|\d+\.\d+ s", latency), latency
    expect(add.locator("dt", has_text="Result").locator("xpath=following-sibling::dd")).to_have_text("9 B")
    arguments = add.get_by_label("Arguments").inner_text()
    assert '"a": 2' in arguments and '"b": 40' in arguments, arguments
    expect(add.get_by_label("Result")).to_have_text("sum is 42")
    assert latency in add.locator(".toolstatus").inner_text()

    # A failed call carries no metadata: the card still knows it for the server's by its name.
    failed = page.locator('[data-call-id="c2"]')
    expect(failed).to_have_attribute("data-mcp-server", "tools")
    expect(failed).to_have_attribute("data-shown", "error")
    expect(failed.locator(".tooltitle")).to_have_text("fail")
    expect(failed.locator("p.error")).to_contain_text("Error executing tool fail")

    assert TOKEN not in page.content()
    add.scroll_into_view_if_needed()
    app.shot("mcp-tool-card")
