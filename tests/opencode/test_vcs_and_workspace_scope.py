"""OpenCode's /vcs/status, /vcs/diff and /vcs/diff/raw over one session's workspace, and which session's
workspace the workspace routes read: the one `?session=` (or a `/workspace/<id>` directory) names, else the
caller's newest, said in `X-Hangar-Session`. A session of another org is a 404 on every route."""

import pytest

from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import text_prompt, wait_idle
from tests.opencode.conftest import assert_response, base_url
from tests.opencode.live import call

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worked(alice, script, make_session, worker):
    """A session whose run wrote src/app.py (no repository: its own steps' diff is the change)."""
    turns = script.load(
        [
            [call("write", "w1", filePath="/workspace/src/app.py", content="print('hello')\n")],
            [{"text": "written"}],
        ]
    )
    session = make_session(alice, turns)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write the app"))
    return wait_idle(session)


def test_vcs_routes_answer_what_the_session_changed(oc, alice, charlie, worked):
    base, named = base_url(alice), {"session": worked.pk}
    status = oc(alice).get(f"{base}/vcs/status", named)
    assert_response(status, "/vcs/status")
    assert status.json() == [{"file": "src/app.py", "additions": 1, "deletions": 0, "status": "added"}]
    assert status["X-Hangar-Session"] == worked.pk
    diff = oc(alice).get(f"{base}/vcs/diff", {**named, "mode": "git"})
    assert_response(diff, "/vcs/diff")
    (changed,) = diff.json()
    assert changed["file"] == "src/app.py" and "+print('hello')" in changed["patch"]
    raw = oc(alice).get(f"{base}/vcs/diff/raw", named)
    assert raw.status_code == 200 and raw["Content-Type"] == "text/x-diff; charset=utf-8"
    assert "+print('hello')" in raw.content.decode() and raw["X-Hangar-Session"] == worked.pk
    assert oc(alice).get(f"{base}/vcs/diff", named).status_code == 400  # mode is required
    assert oc(alice).get(f"{base}/vcs/diff", {**named, "mode": "x"}).json()["data"]["errors"] == {
        "mode": ["Required: git or branch."]
    }
    for route in ("/vcs/status", "/vcs/diff", "/vcs/diff/raw"):
        params = {**named, "mode": "git"}
        assert oc(charlie).get(f"{base}{route}", params).status_code == 404
        # charlie names alice's session from his own project: not found either
        assert oc(charlie).get(f"{base_url(charlie)}{route}", params).status_code == 404


def test_the_workspace_routes_read_the_named_session_not_the_newest(oc, alice, worked):
    newer = session_create(actor=alice.actor, project=alice.project, title="newer")
    sandbox_for(newer).write("/workspace/src/app.py", "print('newer')\n")
    base = base_url(alice)
    default = oc(alice).get(f"{base}/file/content", {"path": "src/app.py"})
    assert default["X-Hangar-Session"] == newer.pk and "newer" in default.json()["content"]
    named = oc(alice).get(f"{base}/file/content", {"path": "src/app.py", "session": worked.pk})
    assert named["X-Hangar-Session"] == worked.pk and named.json()["content"] == "print('hello')\n"
    by_directory = oc(alice).get(f"{base}/file", {"path": "src", "directory": f"/workspace/{worked.pk}"})
    assert by_directory["X-Hangar-Session"] == worked.pk
    assert [e["path"] for e in by_directory.json()] == ["src/app.py"]
    found = oc(alice).get(f"{base}/find/file", {"query": "app", "sessionID": worked.pk})
    assert found.json() == ["src/app.py"] and found["X-Hangar-Session"] == worked.pk
    assert oc(alice).get(f"{base}/vcs/status")["X-Hangar-Session"] == newer.pk
    assert oc(alice).get(f"{base}/vcs/status").json() == []  # the newer one changed nothing through a run


def test_a_named_session_of_another_org_is_not_found(oc, alice, charlie, worked):
    for route, params in (
        ("/file", {"path": ""}),
        ("/file/content", {"path": "src/app.py"}),
        ("/file/status", {}),
        ("/find", {"pattern": "hello"}),
        ("/find/file", {"query": "app"}),
    ):
        response = oc(charlie).get(f"{base_url(charlie)}{route}", {**params, "session": worked.pk})
        assert response.status_code == 404, route
        assert "X-Hangar-Session" not in response
