"""Formatters after write/edit/apply_patch (OpenCode's `formatter` config), through the real worker, the
real Docker sandbox and the scripted model, with the black and prettier the sandbox image ships: a workspace
that turns them on gets its files formatted and the tool says so, and the language server reads the
formatted text; one that does not (Hangar's default, as OpenCode's) keeps what the model wrote; a formatter
that fails or hangs never fails the call. OpenCode's /formatter lists them for the session's workspace,
and another org's member gets nothing of it."""

from __future__ import annotations

import json
import uuid

import pytest

from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import text_prompt, tool_parts, wait_idle
from tests.engine.test_language_servers import _oc, call
from tests.opencode.conftest import assert_response

pytestmark = pytest.mark.django_db(transaction=True)

UGLY_PY = 'import os\ndef  area( w,h ):\n  return w*h\nx = [\n    1,\n    2]\ncount: int = "three"\n'
BLACK_PY = (
    'import os\n\n\ndef area(w, h):\n    return w * h\n\n\nx = [1, 2]\ncount: int = "three"\n'
)  # fmt: skip
UGLY_TS = "export const add=(a:number,b:number)=>{return a+b}\n"
PRETTIER_TS = "export const add = (a: number, b: number) => {\n  return a + b;\n};\n"


def _prepare(session, config: dict, files: dict[str, str] | None = None):
    box = sandbox_for(session)
    box.write("/workspace/opencode.json", json.dumps(config))
    for path, text in (files or {}).items():
        box.write(path, text)
    return box


def test_an_enabled_formatter_rewrites_the_file_before_the_diagnostics(
    alice, script, make_session, start_worker
):
    start_worker(env={"HANGAR_LSP_WAIT_MS": "30000"})
    script_id = script.load(
        [
            [call("write", "c1", filePath="/workspace/ugly.py", content=UGLY_PY)],
            [
                call(
                    "edit",
                    "c2",
                    filePath="/workspace/ugly.py",
                    oldString="x = [1, 2]",
                    newString="x = [ 3,4 ,5 ]",
                )
            ],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    box = _prepare(session, {"formatter": True, "lsp": True})
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write ugly code"))
    wait_idle(session, timeout=180)

    write, edit = tool_parts(session)
    assert [p["state"]["status"] for p in (write, edit)] == ["completed"] * 2
    meta = write["state"]["metadata"]
    assert meta["formatter"] == {"ran": ["black"], "failed": []}
    assert "The file was reformatted by black; read it again before editing it." in write["state"]["output"]
    assert "+def area(w, h):" in meta["diff"]  # the diff shows what the file holds
    assert "+def area(w, h):" in meta["filediff"]["patch"]
    on_disk = box.read_bytes("/workspace/ugly.py").decode()  # read after the run: the edit included
    # The language server read the formatted file: the error is on its line 9, not the written line 7.
    assert "ERROR [9:14]" in write["state"]["output"], write["state"]["output"]
    assert meta["diagnostics"]["/workspace/ugly.py"][0]["range"]["start"]["line"] == 8

    assert edit["state"]["metadata"]["formatter"]["ran"] == ["black"]
    assert "reformatted by black" in edit["state"]["output"]
    assert "+x = [3, 4, 5]" in edit["state"]["metadata"]["diff"]
    assert on_disk == BLACK_PY.replace("x = [1, 2]", "x = [3, 4, 5]")


def test_apply_patch_formats_each_file_it_leaves(alice, script, make_session, worker):
    patch = "*** Begin Patch\n*** Add File: /workspace/src/add.ts\n" + f"+{UGLY_TS}" + "*** End Patch"
    # A "codex" model is offered apply_patch instead of edit and write (OpenCode's rule).
    script_id = script.load(
        [[call("apply_patch", "c1", patchText=patch)], [{"text": "done"}]],
        script_id=f"codex-{uuid.uuid4().hex[:8]}",
    )
    session = make_session(alice, script_id)
    box = _prepare(session, {"formatter": True})
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("patch"))
    wait_idle(session, timeout=120)

    (patched,) = tool_parts(session)
    assert patched["tool"] == "apply_patch" and patched["state"]["status"] == "completed", patched["state"]
    assert patched["state"]["metadata"]["formatter"] == {
        "/workspace/src/add.ts": {"ran": ["prettier"], "failed": []}
    }
    assert "src/add.ts was reformatted by prettier" in patched["state"]["output"]
    assert "+  return a + b;" in patched["state"]["metadata"]["files"][0]["patch"]
    assert box.read_bytes("/workspace/src/add.ts").decode() == PRETTIER_TS


@pytest.mark.parametrize("config", [{}, {"formatter": False}, {"formatter": {"black": {"disabled": True}}}])
def test_a_workspace_that_does_not_enable_a_formatter_keeps_what_was_written(
    alice, script, make_session, worker, config
):
    script_id = script.load(
        [[call("write", "c1", filePath="/workspace/ugly.py", content=UGLY_PY)], [{"text": "ok"}]]
    )
    session = make_session(alice, script_id)
    box = _prepare(session, config)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write"))
    wait_idle(session, timeout=120)

    (write,) = tool_parts(session)
    assert write["state"]["status"] == "completed", write["state"]
    assert write["state"]["output"] == "Wrote file successfully."
    assert "formatter" not in write["state"]["metadata"]
    assert box.read_bytes("/workspace/ugly.py").decode() == UGLY_PY


def test_a_failing_or_hanging_formatter_never_fails_the_call(alice, script, make_session, start_worker):
    start_worker(env={"HANGAR_FORMAT_TIMEOUT_S": "3"})
    broken = "def broken(:\n    pass\n"
    script_id = script.load(
        [
            [call("write", "c1", filePath="/workspace/broken.py", content=broken)],
            [call("write", "c2", filePath="/workspace/stuck.js", content="const a  =  1\n")],
            [{"text": "done"}],
        ]
    )
    session = make_session(alice, script_id)
    # A project's prettier config that never returns: prettier hangs on every file.
    box = _prepare(session, {"formatter": True}, {"/workspace/prettier.config.mjs": "while (true) {}\n"})
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write"))
    wait_idle(session, timeout=120)

    failing, hanging = tool_parts(session)
    assert failing["state"]["status"] == "completed", failing["state"]
    assert failing["state"]["output"] == "Wrote file successfully."
    (failure,) = failing["state"]["metadata"]["formatter"]["failed"]
    assert failure["name"] == "black" and failure["error"].startswith("exit 123:"), failure
    assert box.read_bytes("/workspace/broken.py").decode() == broken

    assert hanging["state"]["status"] == "completed", hanging["state"]
    assert hanging["state"]["metadata"]["formatter"] == {
        "ran": [],
        "failed": [{"name": "prettier", "error": "did not finish within 3 s"}],
    }
    assert box.read_bytes("/workspace/stuck.js").decode() == "const a  =  1\n"
    assert "prettier" not in box.exec("ps -eo args", timeout_s=30).output  # the stuck one was killed


def test_the_formatter_route_lists_the_workspaces_formatters(alice, charlie, script, make_session):
    session = make_session(alice, script.load([[{"text": "unused"}]]))
    config = {
        "formatter": {
            "black": {"disabled": True},
            "md-only": {"command": ["prettier", "--write", "$FILE"], "extensions": [".md"]},
            "shell": {"command": ["sh", "-c", "touch $FILE"], "extensions": [".txt"]},
        }
    }
    _prepare(session, config)
    client = _oc(alice)

    rows = client.get(f"/oc/{alice.project.pk}/formatter", {"session": session.pk})
    assert_response(rows, "/formatter")
    by_name = {r["name"]: r for r in rows.json()}
    assert {n: r["enabled"] for n, r in by_name.items()} == {
        "black": False,
        "prettier": True,
        "md-only": True,
        "shell": False,  # not a formatter the sandbox ships
    }
    assert by_name["black"]["extensions"] == [".py", ".pyi"]
    assert by_name["md-only"]["extensions"] == [".md"]
    assert ".ts" in by_name["prettier"]["extensions"]

    # Another org's member reaches neither the project nor the session's workspace.
    assert _oc(charlie).get(f"/oc/{alice.project.pk}/formatter").status_code == 404
    foreign = _oc(charlie).get(f"/oc/{charlie.project.pk}/formatter", {"session": session.pk})
    assert foreign.status_code == 404
