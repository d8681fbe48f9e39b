"""Budgets in the console, in a real browser: the project or member is picked by name from a list, a budget's
limits are edited in its row, a hard limit is overridden and a budget deleted, all without a browser
dialog. Screenshots at desktop and phone width (var/screenshots/console-budgets-edit-*)."""

import pytest
from playwright.sync_api import expect

from hangar.usage.models import Budget

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_picks_edits_overrides_and_deletes_budgets_without_dialogs(alice, bob, open_app):
    app = open_app(alice)
    page = app.page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto("/o/acme/console/budgets")
    form = page.get_by_role("form", name="Set a budget")

    form.get_by_label("Applies to").select_option("project")
    form.get_by_label("Project").select_option(label="rocket")
    form.get_by_label("Hard limit ($)").fill("50")
    form.get_by_role("button", name="Set budget").click()
    page.get_by_role("status").get_by_text("Budget set.").wait_for()
    form.get_by_label("Applies to").select_option("member")
    form.get_by_label("Member").select_option(label="bob@acme.test")
    form.get_by_label("Soft limit ($)").fill("5")
    form.get_by_label("Hard limit ($)").fill("")
    form.get_by_role("button", name="Set budget").click()
    table = page.get_by_role("table", name="Budgets")
    table.get_by_role("cell", name="bob@acme.test", exact=True).wait_for()
    table.get_by_role("cell", name="rocket", exact=True).wait_for()
    assert Budget.objects.get(scope="project").project_id == alice.project.pk
    assert Budget.objects.get(scope="member").user_id == bob.user.pk

    table.get_by_role("button", name="Edit the budget of rocket").click()
    edit = page.get_by_role("form", name="Edit the budget of rocket")
    edit.get_by_label("Hard limit ($)").fill("80")
    edit.get_by_label("Soft limit ($)").fill("90")  # above the hard limit: refused, named
    edit.get_by_role("button", name="Save limits").click()
    page.get_by_role("alert").filter(has_text="soft_limit").wait_for()
    expect(edit.get_by_label("Hard limit ($)")).to_have_value("80")
    edit.get_by_label("Soft limit ($)").fill("60")
    edit.get_by_role("button", name="Save limits").click()
    table.get_by_role("cell", name="$80.00").wait_for()
    budget = Budget.objects.get(scope="project")
    assert (budget.hard_limit, budget.soft_limit) == (80.0, 60.0)

    table.get_by_role("button", name="Override the budget of rocket").click()
    override = page.get_by_role("form", name="Override the budget of rocket")
    override.get_by_label("Allow this much more this month ($)").fill("15")
    app.shot("console-budgets-edit")
    override.get_by_role("button", name="Allow").click()
    table.get_by_role("cell", name="+$15.00", exact=False).wait_for()
    assert Budget.objects.get(scope="project").override_amount == 15.0

    table.get_by_role("button", name="Delete the budget of bob@acme.test").click()
    page.get_by_role("form", name="Delete the budget of bob@acme.test").get_by_role(
        "button", name="Delete budget"
    ).click()
    page.get_by_role("status").get_by_text("Budget deleted.").wait_for()
    expect(table.get_by_role("cell", name="bob@acme.test", exact=True)).to_have_count(0)
    assert not Budget.objects.filter(scope="member").exists()
    assert dialogs == []
