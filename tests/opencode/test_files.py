"""OpenCode's file and find routes over the workspace of the caller's newest session, read inside its
sandbox: listing, reading (text and binary), what the session changed, ripgrep's matches, file names,
and no symbols; paths that leave the workspace are refused; another org gets a 404 on each."""

import pytest

from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import text_prompt, wait_idle
from tests.opencode.conftest import assert_response, base_url
from tests.opencode.live import call

pytestmark = pytest.mark.django_db(transaction=True)

ROUTES = [
    ("/file", {"path": "src"}),
    ("/file/content", {"path": "src/app.py"}),
    ("/file/status", {}),
    ("/find", {"pattern": "hello"}),
    ("/find/file", {"query": "app"}),
    ("/find/symbol", {"query": "main"}),
]


@pytest.fixture
def workspace(alice, script, make_session, worker):
    turns = script.load(
        [
            [
                call(
                    "write",
                    "w1",
                    filePath="/workspace/src/app.py",
                    content="def main():\n    print('hello')\n",
                )
            ],
            [{"text": "written"}],
        ]
    )
    session = make_session(alice, turns)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write the app"))
    wait_idle(session)
    sandbox_for(session).write("/workspace/logo.bin", b"\x89PNG\x00\x01")
    return session


def test_the_routes_read_the_newest_sessions_workspace(oc, alice, workspace):
    base = base_url(alice)
    listed = oc(alice).get(f"{base}/file", {"path": "src"})
    assert_response(listed, "/file")
    assert listed.json() == [
        {
            "name": "app.py",
            "path": "src/app.py",
            "absolute": "/workspace/src/app.py",
            "type": "file",
            "ignored": False,
        }
    ]
    content = oc(alice).get(f"{base}/file/content", {"path": "src/app.py"})
    assert_response(content, "/file/content")
    assert content.json() == {"type": "text", "content": "def main():\n    print('hello')\n"}
    assert oc(alice).get(f"{base}/file/content", {"path": "logo.bin"}).json()["type"] == "binary"
    assert oc(alice).get(f"{base}/file/content", {"path": "nope.txt"}).status_code == 404
    assert oc(alice).get(f"{base}/file", {"path": "../etc"}).status_code == 400

    status = oc(alice).get(f"{base}/file/status")
    assert_response(status, "/file/status")
    assert status.json() == [{"path": "src/app.py", "added": 2, "removed": 0, "status": "added"}]

    found = oc(alice).get(f"{base}/find", {"pattern": "print\\('hel"})
    assert_response(found, "/find")
    (match,) = found.json()
    assert match["path"] == {"text": "src/app.py"} and match["line_number"] == 2
    assert match["absolute_offset"] == len("def main():\n")
    assert match["submatches"] == [{"match": {"text": "print('hel"}, "start": 4, "end": 14}]

    files = oc(alice).get(f"{base}/find/file", {"query": "app"})
    assert_response(files, "/find/file")
    assert files.json() == ["src/app.py"]
    assert oc(alice).get(f"{base}/find/file", {"query": "sr", "type": "directory"}).json() == ["src/"]
    symbols = oc(alice).get(f"{base}/find/symbol", {"query": "main"})
    assert_response(symbols, "/find/symbol")
    assert symbols.json() == []


@pytest.mark.parametrize("route, params", ROUTES)
def test_each_route_is_not_found_for_another_org(oc, alice, charlie, route, params):
    assert oc(charlie).get(f"{base_url(alice)}{route}", params).status_code == 404


def test_without_a_session_there_is_nothing_to_list(oc, alice):
    base = base_url(alice)
    assert oc(alice).get(f"{base}/file", {"path": ""}).json() == []
    assert oc(alice).get(f"{base}/find", {"pattern": "x"}).json() == []
    assert oc(alice).get(f"{base}/file/status").json() == []
    assert oc(alice).get(f"{base}/file/content", {"path": "a.txt"}).status_code == 404


def test_a_file_part_the_tui_sends_is_read_for_the_prompt(oc, alice, workspace, script):
    # `@src/app.py` in OpenCode's TUI: a file part with the server's own path, as a file:// URL.
    answer = script.load([[{"text": "it prints hello"}]])
    part = {
        "type": "file",
        "mime": "text/plain",
        "filename": "src/app.py",
        "url": "file:///workspace/src/app.py",
        "source": {
            "type": "file",
            "path": "src/app.py",
            "text": {"value": "@src/app.py", "start": 5, "end": 16},
        },
    }
    url = f"{base_url(alice)}/session/{workspace.pk}/prompt_async"
    body = {
        "parts": [{"type": "text", "text": "what does @src/app.py do"}, part],
        "model": {"providerID": "scripted", "modelID": answer},
    }
    sent = oc(alice).post(url, body, format="json")
    assert sent.status_code == 204, sent.content
    wait_idle(workspace)
    messages = oc(alice).get(f"{base_url(alice)}/session/{workspace.pk}/message").json()
    parts = messages[-2]["parts"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[0] == "what does @src/app.py do"
    assert texts[1] == 'Called the Read tool with the following input: {"filePath": "/workspace/src/app.py"}'
    assert "2:     print('hello')" in texts[2]
    assert parts[-1]["type"] == "file"  # the part itself stays, for the TUI's chip
    [request] = [r for r in script.requests(answer) if r.get("stream")]
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert "2:     print('hello')" in users[-2]  # the model read it (then the model switch is told)
