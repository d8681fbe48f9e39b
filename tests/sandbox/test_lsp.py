"""Language servers in the real sandbox (agent/lsp.py): started on the first file of their language,
their findings after a change, queries, a crash, and nothing started for a session that never asks."""

from __future__ import annotations

import time
import uuid

import pytest

from sandbox.protocol import SandboxSpec
from tests.sandbox.conftest import RUN_ID

PY_TYPE_ERROR = 'def double(x: int) -> int:\n    return x * 2\n\n\ncount: int = "three"\nprint(double(2))\n'
TS_SYNTAX_ERROR = (
    "export function add(a: number, b: number): number {\n  return a + b;\n\nconst x = add(1, 2\n"
)


@pytest.fixture(scope="module")
def lsp_box(sandboxes):
    # Language servers want more than the suite's 256 MB default: node plus a server's heap.
    sid = f"t{RUN_ID}-lsp-{uuid.uuid4().hex[:6]}"
    yield sandboxes.get_or_create(SandboxSpec(session_id=sid, memory_mb=1024, pids=256, disk_mb=128))
    sandboxes.destroy(sid)


def touch(box, path: str) -> dict:
    return box.lsp_touch(path, wait_ms=30_000, mode="on")


def _errors(found: dict, path: str) -> list[dict]:
    return [d for d in found.get(path, []) if d.get("severity") == 1]


def test_no_server_starts_unless_the_workspace_or_the_operator_turns_it_on(sandboxes, new_session_id):
    box = sandboxes.get_or_create(SandboxSpec(session_id=new_session_id(), memory_mb=1024, disk_mb=64))
    box.write("notes.txt", "plain text\n")
    box.write("typed.py", PY_TYPE_ERROR)
    assert touch(box, "/workspace/notes.txt") == {}  # no language for it
    assert box.lsp_touch("/workspace/typed.py", wait_ms=10_000) == {}  # "auto": opencode.json says nothing
    box.write("opencode.json", '{"lsp": {"pyright": {"disabled": true}}}')
    assert touch(box, "/workspace/typed.py") == {}  # the workspace turned pyright off
    assert box.lsp_status() == []
    assert "node" not in box.exec("ps -eo comm=").output.split()
    box.write("opencode.json", '{"lsp": true}')
    assert _errors(box.lsp_touch("/workspace/typed.py", wait_ms=30_000), "/workspace/typed.py")


def test_a_python_type_error_is_reported_after_the_write(lsp_box):
    lsp_box.write("typed.py", PY_TYPE_ERROR)
    found = touch(lsp_box, "/workspace/typed.py")
    errors = _errors(found, "/workspace/typed.py")
    assert errors, found
    assert errors[0]["range"]["start"]["line"] == 4
    assert "three" in errors[0]["message"] and '"int"' in errors[0]["message"]
    assert [row["id"] for row in lsp_box.lsp_status()] == ["pyright"]

    lsp_box.write("typed.py", PY_TYPE_ERROR.replace('"three"', "3"))
    assert _errors(touch(lsp_box, "/workspace/typed.py"), "/workspace/typed.py") == []


def test_a_typescript_syntax_error_is_reported(lsp_box):
    lsp_box.write("src/add.ts", TS_SYNTAX_ERROR)
    found = touch(lsp_box, "/workspace/src/add.ts")
    errors = _errors(found, "/workspace/src/add.ts")
    assert errors, found
    assert any("expected" in e["message"].lower() for e in errors)


def test_definition_and_symbols_answer_for_real(lsp_box):
    lsp_box.write("lib.py", "def greet(name: str) -> str:\n    return 'hi ' + name\n")
    lsp_box.write("use.py", "from lib import greet\n\nprint(greet('x'))\n")
    touch(lsp_box, "/workspace/lib.py")
    touch(lsp_box, "/workspace/use.py")
    # Right after the open the server may still be analysing: it answers None until it is done.
    found = None
    for _ in range(100):
        found = lsp_box.lsp_query("definition", "/workspace/use.py", line=2, character=7)
        if found:
            break
        time.sleep(0.2)
    targets = found if isinstance(found, list) else [found]
    assert any(
        (t.get("uri") or t.get("targetUri", "")).endswith("/lib.py") for t in targets if isinstance(t, dict)
    ), found
    symbols = lsp_box.lsp_query("documentSymbol", "/workspace/lib.py")
    assert [s["name"] for s in symbols] == ["greet"]
    workspace = lsp_box.lsp_query("workspaceSymbol", text="greet")
    assert any(s["name"] == "greet" for s in workspace)


def test_a_crashed_server_is_started_again_on_the_next_change(lsp_box):
    lsp_box.write("again.py", PY_TYPE_ERROR)
    touch(lsp_box, "/workspace/again.py")
    before = next(row for row in lsp_box.lsp_status() if row["id"] == "pyright")
    lsp_box.exec(f"kill -9 {before['pid']}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if next(r for r in lsp_box.lsp_status() if r["id"] == "pyright")["status"] == "error":
            break
        time.sleep(0.1)
    lsp_box.write("again.py", PY_TYPE_ERROR + "\nname: str = 4\n")
    errors = _errors(touch(lsp_box, "/workspace/again.py"), "/workspace/again.py")
    assert len(errors) == 2, errors
    after = next(row for row in lsp_box.lsp_status() if row["id"] == "pyright")
    assert after["status"] == "connected" and after["pid"] != before["pid"] and after["restarts"] == 1


def test_a_path_outside_the_workspace_is_refused(lsp_box):
    from sandbox.protocol import SandboxError

    with pytest.raises(SandboxError, match="under /workspace"):
        lsp_box.lsp_touch("/etc/passwd")
