"""Language servers through the real worker and Docker: a scripted model writes a Python file with a type
error and a TypeScript file with a syntax error, and each tool result tells the model, as OpenCode's does;
the `lsp` tool finds a definition; OpenCode's /lsp and /find/symbol answer from the session's sandbox,
and another org's member gets nothing of it."""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from hangar.engine.services import session_prompt
from tests.engine.conftest import text_prompt, tool_parts, wait_idle
from tests.opencode.conftest import assert_response

pytestmark = pytest.mark.django_db(transaction=True)

PY = 'def double(x: int) -> int:\n    return x * 2\n\n\ncount: int = "three"\nprint(double(2))\n'
TS = "export function add(a: number, b: number): number {\n  return a + b;\n\nconst x = add(1, 2\n"


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _oc(persona) -> APIClient:
    client = APIClient()
    basic = base64.b64encode(f"opencode:{persona.token}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    return client


def test_write_and_edit_results_carry_the_language_servers_errors(
    alice, charlie, script, make_session, start_worker
):
    start_worker(env={"HANGAR_LSP_TOOL": "1", "HANGAR_LSP_WAIT_MS": "30000"})
    script_id = script.load(
        [
            [call("write", "c0", filePath="/workspace/opencode.json", content='{"lsp": true}\n')],
            [call("write", "c1", filePath="/workspace/typed.py", content=PY)],
            [call("write", "c2", filePath="/workspace/src/add.ts", content=TS)],
            [
                call(
                    "edit",
                    "c3",
                    filePath="/workspace/typed.py",
                    oldString='count: int = "three"',
                    newString="count: int = 3",
                )
            ],
            [
                call(
                    "lsp",
                    "c4",
                    operation="goToDefinition",
                    filePath="/workspace/typed.py",
                    line=6,
                    character=7,
                )
            ],
            [{"text": "Fixed."}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write typed code"))
    wait_idle(session, timeout=180)

    config, py, ts, edit, lsp = tool_parts(session)
    assert [t["state"]["status"] for t in (config, py, ts, edit, lsp)] == ["completed"] * 5
    assert py["state"]["output"].startswith(
        'Wrote file successfully.\n\nLSP errors detected in this file, please fix:\n<diagnostics file="/workspace/typed.py">\nERROR [5:14] '
    ), py["state"]["output"]
    assert py["state"]["metadata"]["diagnostics"]["/workspace/typed.py"][0]["severity"] == 1
    assert '<diagnostics file="/workspace/src/add.ts">\nERROR [' in ts["state"]["output"]
    assert "expected" in ts["state"]["output"].lower()
    # The edit fixed the type error: no findings in its text (the TypeScript file is not edit's business).
    assert edit["state"]["output"] == "Edit applied successfully."
    assert lsp["state"]["title"] == "goToDefinition typed.py:6:7"
    assert '"uri": "file:///workspace/typed.py"' in lsp["state"]["output"]
    assert '"line": 0' in lsp["state"]["output"]  # double is defined on the first line

    client = _oc(alice)
    servers = client.get(f"/oc/{alice.project.pk}/lsp")
    assert_response(servers, "/lsp")
    assert {(s["id"], s["status"]) for s in servers.json()} == {
        ("pyright", "connected"),
        ("typescript", "connected"),
    }
    symbols = client.get(f"/oc/{alice.project.pk}/find/symbol", {"query": "double"})
    assert_response(symbols, "/find/symbol")
    assert any(s["name"] == "double" and s["location"]["uri"].endswith("/typed.py") for s in symbols.json())

    # Another org's member reaches neither the project nor its servers.
    assert _oc(charlie).get(f"/oc/{alice.project.pk}/lsp").status_code == 404
    assert _oc(charlie).get(f"/oc/{alice.project.pk}/find/symbol", {"query": "double"}).status_code == 404
