"""A project's settings page in a real browser: an admin changes what the project API can change (name,
default model, setup script, limits, network policy and egress, permission rules and agents through
their row editors, env vars), a 400 names the field and keeps what was typed; a member only reads.
Screenshots at desktop and phone width (var/screenshots/project-settings-*)."""

import pytest
from playwright.sync_api import expect

from hangar.projects.models import Project, ProjectEnvVar
from tests.web.conftest import DESKTOP, SHOTS

pytestmark = pytest.mark.django_db(transaction=True)


def whole(page, name: str) -> None:
    """The whole page (its main pane scrolls, so a tall viewport) at desktop and phone width."""
    for label, width in (("desktop", 1280), ("phone", 390)):
        page.set_viewport_size({"width": width, "height": 800})
        height = page.evaluate("document.querySelector('main.content').scrollHeight") + 60
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SHOTS / f"{name}-whole-{label}.png"))
    for index, section in enumerate(page.locator("main section.card").all()):
        section.screenshot(path=str(SHOTS / f"{name}-phone-{index}.png"))
    page.set_viewport_size(DESKTOP)


def test_an_admin_changes_a_project_from_its_settings_page(alice, open_app):
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}")
    page.get_by_role("navigation", name="Sessions").get_by_role("link", name="Project settings").click()
    page.get_by_role("heading", name="Project settings").wait_for()

    general = page.get_by_role("form", name="General")
    general.get_by_label("Name").fill("Rocket engine")
    general.get_by_label("Default model").fill("openai/gpt-4o-mini")
    general.get_by_label("Setup script").fill("pip install -e .\n")
    general.get_by_role("button", name="Save general").click()
    general.get_by_role("status").get_by_text("Saved.").wait_for()
    project = Project.objects.get(pk=alice.project.pk)
    assert (project.name, project.default_model, project.setup_script) == (
        "Rocket engine",
        "openai/gpt-4o-mini",
        "pip install -e .\n",
    )

    # A bad limit: the 400 names the field, and what was typed stays in the form.
    limits = page.get_by_role("form", name="Sandbox limits")
    limits.get_by_label("Memory (MB)").fill("1")
    limits.get_by_role("button", name="Save sandbox limits").click()
    limits.get_by_role("alert").filter(has_text="sandbox_memory_mb").wait_for()
    expect(limits.get_by_label("Memory (MB)")).to_have_value("1")
    limits.get_by_label("Memory (MB)").fill("1024")
    limits.get_by_role("button", name="Save sandbox limits").click()
    limits.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Project.objects.get(pk=project.pk).sandbox_memory_mb == 1024

    network = page.get_by_role("form", name="Network")
    network.get_by_label("Network policy").select_option("allowlist")
    network.get_by_role("button", name="Add host").click()
    network.get_by_label("Host 1", exact=True).fill("pypi.org")
    network.get_by_role("button", name="Save network").click()
    network.get_by_role("status").get_by_text("Saved.").wait_for()
    project = Project.objects.get(pk=project.pk)
    assert (project.network_policy, project.network_allowlist) == ("allowlist", ["pypi.org"])

    rules = page.get_by_role("form", name="Permission rules")
    rules.get_by_role("button", name="Add rule").click()
    row = rules.get_by_role("listitem", name="Rule 1")
    row.get_by_label("Permission").select_option("bash")
    row.get_by_label("Pattern").fill("git push *")
    row.get_by_label("Action").select_option("deny")
    rules.get_by_role("button", name="Save permission rules").click()
    rules.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Project.objects.get(pk=project.pk).permission_rules == [
        {"permission": "bash", "pattern": "git push *", "action": "deny"}
    ]
    # The same rules as JSON, the advanced view; text that is not JSON is refused before any request.
    rules.get_by_role("button", name="Advanced (JSON)").click()
    raw = rules.get_by_label("Rules (JSON)")
    assert '"git push *"' in raw.input_value()
    raw.fill("[{")
    rules.get_by_role("alert").filter(has_text="not valid JSON").wait_for()
    expect(rules.get_by_role("button", name="Save permission rules")).to_be_disabled()
    raw.fill('[{"permission": "read", "pattern": "*.env", "action": "never"}]')
    rules.get_by_role("button", name="Save permission rules").click()
    rules.get_by_role("alert").filter(has_text="permission_rules[0].action").wait_for()
    assert Project.objects.get(pk=project.pk).permission_rules[0]["pattern"] == "git push *"

    agents = page.get_by_role("form", name="Agents")
    agents.get_by_role("button", name="Add agent").click()
    agent = agents.get_by_role("listitem").first
    agent.get_by_label("Name").fill("reviewer")
    agent.get_by_label("Description").fill("Reviews a diff")
    agent.get_by_label("Prompt").fill("You review code.")
    agents.get_by_role("button", name="Save agents").click()
    agents.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Project.objects.get(pk=project.pk).agents == {
        "reviewer": {"mode": "subagent", "description": "Reviews a diff", "prompt": "You review code."}
    }

    env = page.get_by_role("form", name="Set a variable")
    env.get_by_label("Name").fill("DEBUG")
    env.get_by_label("Value").fill("1")
    env.get_by_label("Secret").uncheck()
    env.get_by_role("button", name="Set variable").click()
    page.get_by_role("table", name="Environment variables").get_by_role("cell", name="DEBUG").wait_for()
    assert ProjectEnvVar.objects.get(project=project, name="DEBUG").secret is False

    page.get_by_role("form", name="Project repository").wait_for()
    app.shot("project-settings")
    whole(page, "project-settings")


def test_what_is_typed_in_one_section_survives_another_sections_save(alice, open_app):
    page = open_app(alice).page
    page.goto(f"/o/acme/p/{alice.project.pk}/settings")
    general = page.get_by_role("form", name="General")
    general.get_by_label("Name").fill("Not saved yet")
    limits = page.get_by_role("form", name="Sandbox limits")
    limits.get_by_label("Memory (MB)").fill("2048")
    limits.get_by_role("button", name="Save sandbox limits").click()
    limits.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Project.objects.get(pk=alice.project.pk).sandbox_memory_mb == 2048
    expect(general.get_by_label("Name")).to_have_value("Not saved yet")
    expect(limits.get_by_label("Memory (MB)")).to_have_value("2048")
    general.get_by_role("button", name="Save general").click()
    general.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Project.objects.get(pk=alice.project.pk).name == "Not saved yet"


def test_a_member_reads_project_settings_without_changing_them(alice, bob, open_app):
    app = open_app(bob)
    page = app.page
    page.goto(f"/o/acme/p/{bob.project.pk}/settings")
    page.get_by_text("Only an org admin or owner changes a project's settings").wait_for()
    expect(page.get_by_role("form", name="General").get_by_label("Name")).to_be_disabled()
    assert page.get_by_role("form", name="Delete the project").count() == 0
    app.shot("project-settings-member")
