# ruff: noqa: F811  (the fixtures imported below are the parameters of the test)
"""Every TUI feature a daily OpenCode user reaches for, in the stock TUI (npm opencode-ai 1.18.33, `opencode
attach`) driven in tmux against a live Hangar (Daphne, a worker, the Docker sandbox, the scripted model):
an `@explore` mention runs the explore subagent as a task; `!` runs a shell command in the sandbox and shows
its output; `/init` runs the built-in init command and the model writes AGENTS.md; `/models` switches the
model and the next prompt goes to it; `/share` gives a link that opens in Chromium for a member of the org
and is "not found" for another org's member; `/undo` reverts the last prompt. The TUI asks for no route
that is missing (OpenCode's newer `/api/*` aside)."""

import re

import pytest
from playwright.sync_api import expect

from hangar.conversations.models import Message, Part, Session, SessionShare
from hangar.engine.workspace.sandboxes import manager
from hangar.projects.models import ProviderCredential
from tests.engine.conftest import give_scripted_credential, wait_for
from tests.opencode.live import call, opencode_env
from tests.opencode.test_tui import Tui
from tests.web.conftest import chromium, open_app  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(420)]


def test_the_tui_mentions_shells_inits_switches_model_shares_and_undoes(
    alice,
    bob,
    charlie,
    daphne,
    worker,
    script,
    scripted,
    open_app,
    tmp_path,
):
    kid = script.load([[{"text": "Routes live in urls.py."}]])
    first = script.load(
        [
            [
                call(
                    "task",
                    "t1",
                    description="Find routes",
                    prompt=f"[[script:{kid}]] find the routes",
                    subagent_type="explore",
                )
            ],
            [{"text": "Explored the routes."}],
            [call("write", "w1", filePath="/workspace/AGENTS.md", content="# Agents\n\nRun `make test`.\n")],
            [{"text": "Wrote AGENTS.md."}],
        ],
        title="TUI features",
    )
    other = script.load([[{"text": "Answer from model B."}]], title="TUI features")
    # The project's model names no script (each conversation's marker picks one); the other model is one.
    give_scripted_credential(alice.org, scripted)
    ProviderCredential.objects.filter(org=alice.org).update(models_list=["router", other])
    alice.project.default_model = "scripted/router"
    alice.project.save()
    env = {k: v for k, v in opencode_env(tmp_path).items() if k != "OPENCODE_DISABLE_SHARE"}
    tui = Tui(f"{daphne.url}/oc/{alice.project.pk}", alice.token, tmp_path, env=env)
    session = None
    try:
        tui.wait_for("Build", "/workspace")

        # @explore: picked from the mention list, it becomes an agent part and the model runs the task.
        tui.keys("@expl")
        tui.wait_for("@explore")
        tui.settle()  # the list filtered to its end: under load, an Enter too early picked no agent (CI)
        tui.keys("Enter")
        tui.type(f"[[script:{first}]] find the routes")
        tui.wait_for("Explore Task", "Explored the routes.", timeout=120)
        session = Session.objects.get(project=alice.project, parent=None)
        assert Part.objects.filter(session=session, type="agent", data__name="explore").exists()
        assert Session.objects.get(parent=session).agent == "explore"

        # !: shell mode runs in the sandbox and shows the output.
        tui.keys("!")
        tui.wait_for("Shell")
        tui.type("printf 'shell%s\\n' -output-here")
        tui.wait_for("shell-output-here")
        assert Part.objects.filter(session=session, type="tool", data__tool="bash").exists()

        # /init: the built-in command, listed with its description; the model writes AGENTS.md.
        tui.keys("/init")
        tui.wait_for("guided AGENTS.md setup")
        tui.keys("Enter")
        tui.keys("Enter")
        tui.wait_for("Wrote AGENTS.md.", timeout=90)
        assert "make test" in manager().connect(session.pk).read("/workspace/AGENTS.md").content

        # /models: another model, and the next prompt goes to it.
        tui.keys("/models")
        tui.wait_for("/models")
        tui.keys("Enter")
        tui.wait_for("Select model")
        tui.keys(other)
        tui.keys("Enter")
        tui.wait_for(f"Build · {other}")
        tui.type("now answer from the other model")
        tui.wait_for("Answer from model B.", timeout=90)
        last_user = Message.objects.filter(session=session, role="user").order_by("-id").first()
        assert last_user.data["model"] == {"providerID": "scripted", "modelID": other}

        # /share: a link into the web app; a member opens it in Chromium, another org's member cannot.
        tui.keys("/share")
        tui.wait_for("Share session")
        shared = lambda: SessionShare.objects.filter(session=session, revoked_at=None).exists()  # noqa: E731
        for _ in range(3):  # the first Enter may only complete the command in the prompt
            tui.keys("Enter")
            try:
                wait_for(shared, timeout=5, what="a share")
                break
            except AssertionError:
                continue
        assert shared(), tui.screen()
        url = Session.objects.get(pk=session.pk).share["url"]
        path = "/share/" + url.rsplit("/share/", 1)[1]
        member = open_app(bob).page
        member.goto(path)
        expect(member.get_by_test_id("share-view")).to_contain_text("Answer from model B.")
        stranger = open_app(charlie).page
        stranger.goto(path)
        expect(stranger.get_by_test_id("share-missing")).to_be_visible()
        assert "Answer from model B." not in stranger.content()

        # /undo: the last prompt is reverted.
        tui.keys("/undo")
        tui.wait_for("Undo previous message")
        tui.keys("Enter")
        tui.wait_for("1 message reverted")
        assert Session.objects.get(pk=session.pk).revert["messageID"] == last_user.pk
    finally:
        tui.close()
        if session is not None:
            for child in Session.objects.filter(parent=session):
                manager().destroy(child.pk)
            manager().destroy(session.pk)
    missing = set(
        re.findall(rf'"(?:GET|POST) /oc/{alice.project.pk}(/[^ ?"]*)[^"]*" 404', daphne.log_path.read_text())
    )
    assert {route for route in missing if not route.startswith("/api/")} == set(), missing
