"""The console's project settings in a real browser (issue 28 item 6): an admin edits a secret's scope (the
setup script, command patterns, MCP servers), a bad pattern is a 400 naming the field with what was typed
kept; the cached environments the setup script left are listed with their size, a member reads them and an
admin removes one. Screenshots at desktop and phone width (var/screenshots/secret-scopes-*, environments-*)."""

import pytest
from playwright.sync_api import expect

from hangar.conversations.services import session_create
from hangar.engine.workspace.env_cache import environments_of
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects.env_var_services import env_var_set
from hangar.projects.models import ProjectEnvVar

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def test_an_admin_edits_a_secrets_scope_and_a_bad_pattern_names_its_field(alice, open_app):
    env_var_set(actor=alice.actor, project=alice.project, name="NPM_TOKEN", value="npm_tok-Zq8xW3vK9pLm2Rt7")
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/settings")
    table = page.get_by_role("table", name="Environment variables")
    row = table.get_by_role("row").filter(has_text="NPM_TOKEN")
    expect(row).to_contain_text("nothing (unused)")
    row.get_by_role("button", name="Scope").click()
    form = page.get_by_role("form", name="Scope of NPM_TOKEN")
    form.get_by_label("The setup script").check()
    form.get_by_label("Commands (one bash pattern a line)").fill("npm publish *\n*")
    form.get_by_role("button", name="Save scope").click()
    form.get_by_role("alert").filter(has_text="scope.commands").wait_for()
    expect(form.get_by_label("Commands (one bash pattern a line)")).to_have_value("npm publish *\n*")
    form.get_by_label("Commands (one bash pattern a line)").fill("npm publish *\nnpm publish")
    form.get_by_label("MCP servers (comma-separated)").fill("github, registry")
    form.scroll_into_view_if_needed()
    app.shot("secret-scopes-form")
    form.get_by_role("button", name="Save scope").click()
    expect(row).to_contain_text("setup script, `npm publish *`, `npm publish`, MCP github, MCP registry")
    var = ProjectEnvVar.objects.get(project=alice.project, name="NPM_TOKEN")
    assert (var.scope_setup, var.scope_commands, var.scope_mcp) == (
        True,
        ["npm publish *", "npm publish"],
        ["github", "registry"],
    )
    assert "npm_tok" not in page.content()
    app.shot("secret-scopes")


def test_cached_environments_are_listed_with_their_size_and_an_admin_removes_one(
    alice, bob, open_app, sessions_made
):
    for kept in environments_of(alice.org.pk):  # an earlier run's, on the host (ids repeat across runs)
        from sandbox import env_cache
        from sandbox.gitops.layers import remove_layer

        remove_layer(env_cache.layer_path(kept["key"]))
    project = alice.project
    project.setup_script = "head -c 2500000 /dev/urandom > deps.bin; echo ready"
    project.save()
    session = session_create(actor=alice.actor, project=project, title="t")
    sessions_made.append(session.pk)
    sandbox_for(session)
    (kept,) = environments_of(alice.org.pk, project.pk)

    member = open_app(bob)
    member.page.goto(f"/o/acme/p/{project.pk}/settings")
    table = member.page.get_by_role("table", name="Cached environments")
    expect(table).to_contain_text("no repository")
    expect(table).to_contain_text("2.4 MB")
    expect(table).to_contain_text(kept["script"])
    assert table.get_by_role("button", name="Remove the environment of the setup script").count() == 0
    table.scroll_into_view_if_needed()
    member.shot("environments-member")

    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{project.pk}/settings")
    section = page.get_by_role("region", name="Cached environments")
    expect(section.get_by_role("status")).to_have_text("1 kept, 2.4 MB in all.")
    section.scroll_into_view_if_needed()
    app.shot("environments")
    section.get_by_role("button", name="Remove the environment of the setup script").click()
    section.get_by_text("None yet").wait_for()
    assert environments_of(alice.org.pk, project.pk) == []


def test_an_admin_opens_hosts_for_the_setup_script_only(alice, open_app):
    from hangar.projects.models import Project

    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/settings")
    form = page.get_by_role("form", name="Setup hosts")
    form.get_by_role("button", name="Add host").click()
    form.get_by_label("Host 1", exact=True).fill("169.254.169.254")
    form.get_by_role("button", name="Save setup hosts").click()
    form.get_by_role("alert").filter(has_text="setup_network_allowlist[0]").wait_for()
    form.get_by_label("Host 1", exact=True).fill("pypi.org")
    form.get_by_role("button", name="Save setup hosts").click()
    form.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Project.objects.get(pk=alice.project.pk).setup_network_allowlist == ["pypi.org"]
