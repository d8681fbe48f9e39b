"""Every tool against the real Docker sandbox (no mocks): files, shell, search, batch, patch,
truncation, todos. One container per module; each test uses its own directory inside it."""

import threading
import time
import uuid

import pytest

from hangar.engine.tools.base import ToolError
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL, get_tools

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def d(docker):
    """A fresh directory under /workspace for this test."""
    path = f"/workspace/t-{uuid.uuid4().hex[:8]}"
    docker.sandbox.mkdir(path)
    docker.dir = path
    return docker


def run(h, tool_name, call_id="call_1", **args):
    return execute_tool(ALL[tool_name], args, h.ctx(call_id=call_id, tools=get_tools("build", "claude")))


def test_write_read_edit_round_trip_in_the_container(d):
    path = f"{d.dir}/app.py"
    run(d, "write", filePath=path, content="def add(a, b):\n    return a+b\n")
    d.read_paths.clear()  # as in a session that did not write or read it
    with pytest.raises(ToolError, match="before overwriting it"):
        run(d, "write", filePath=path, content="x")
    read = run(d, "read", filePath=path)
    assert "1: def add(a, b):\n2:     return a+b" in read.output
    fuzzy = run(d, "edit", filePath=path, oldString="    return  a+b", newString="    return a + b")
    assert fuzzy.metadata["replacer"] == "WhitespaceNormalizedReplacer"
    assert d.sandbox.read_bytes(path) == b"def add(a, b):\n    return a + b\n"
    out = run(
        d,
        "bash",
        command=f"python3 -c 'import sys; sys.path.insert(0, \"{d.dir}\"); import app; print(app.add(2, 3))'",
        description="Run add",
    )
    assert out.output.strip() == "5" and out.metadata["exit"] == 0


def test_edit_keeps_crlf_in_the_container(d):
    path = f"{d.dir}/win.txt"
    d.sandbox.write(path, "a\r\nb\r\n")
    run(d, "read", filePath=path)
    run(d, "edit", filePath=path, oldString="a\nb", newString="c\nd")
    assert d.sandbox.read_bytes(path) == b"c\r\nd\r\n"


def test_read_rejects_binaries_and_directories_in_the_container(d):
    d.sandbox.write(f"{d.dir}/x.bin", b"\x00\xff\x00")
    with pytest.raises(ToolError, match="Cannot read binary file"):
        run(d, "read", filePath=f"{d.dir}/x.bin")
    with pytest.raises(ToolError, match="Path is a directory"):
        run(d, "read", filePath=d.dir)


def test_read_refuses_an_image_over_five_megabytes_and_attaches_a_small_one(d):
    d.sandbox.exec(f"cd {d.dir} && truncate -s 400M huge.png && head -c 3000 /dev/urandom > small.png")
    with pytest.raises(ToolError, match=r"Image is too large to read: 419.4 MB \(the limit is 5 MB\)"):
        run(d, "read", filePath=f"{d.dir}/huge.png")
    small = run(d, "read", filePath=f"{d.dir}/small.png")
    assert small.output == "Image read successfully"
    assert small.attachments[0]["url"].startswith("data:image/png;base64,")


def test_bash_streams_output_into_metadata_and_reports_the_exit_code(d):
    result = run(
        d,
        "bash",
        command="for i in 1 2 3; do echo tick $i; sleep 0.1; done; exit 7",
        workdir=d.dir,
        description="Count ticks",
    )
    assert result.output == "tick 1\ntick 2\ntick 3\n"
    assert result.metadata["exit"] == 7
    streamed = [u["output"] for u in d.updates]
    assert streamed[0] == "" and "tick 3" in streamed[-1] and len(streamed) >= 3
    assert d.asked("bash")[0]["patterns"][-1] == "exit 7"


def test_bash_timeout_kills_the_command_with_a_clear_message(d):
    started = time.monotonic()
    result = run(d, "bash", command="echo begin; sleep 30; echo never", timeout=700, description="Sleep long")
    assert time.monotonic() - started < 10
    assert result.output.startswith("begin\n") and "never" not in result.output
    assert "bash tool terminated command after exceeding timeout 700 ms" in result.output
    assert result.metadata["status"] == "timeout"


def test_bash_abort_cancels_the_running_command(d):
    threading.Timer(0.5, d.abort.set).start()
    started = time.monotonic()
    result = run(d, "bash", command="echo go; sleep 30", description="Sleep")
    assert time.monotonic() - started < 10
    assert "User aborted the command" in result.output and result.metadata["status"] == "cancelled"
    d.abort.clear()


def test_list_glob_and_grep_use_opencodes_formats(d):
    for name, text in {
        "src/a.py": "import os\nTODO: a\n",
        "src/deep/b.py": "TODO: b\n",
        "notes.md": "none\n",
    }.items():
        d.sandbox.write(f"{d.dir}/{name}", text)
    listing = run(d, "list", path=d.dir)
    assert listing.output == f"{d.dir}/\n  src/\n    deep/\n      b.py\n    a.py\n  notes.md\n"
    found = run(d, "glob", pattern="**/*.py", path=d.dir)
    assert sorted(found.output.split("\n")) == [f"{d.dir}/src/a.py", f"{d.dir}/src/deep/b.py"]
    assert run(d, "glob", pattern="*.rs", path=d.dir).output == "No files found"
    grep = run(d, "grep", pattern="TODO", path=d.dir, include="*.py")
    assert grep.output.startswith("Found 2 matches\n")
    assert f"{d.dir}/src/a.py:\n  Line 2: TODO: a" in grep.output
    assert f"{d.dir}/src/deep/b.py:\n  Line 1: TODO: b" in grep.output


def test_glob_caps_at_100_and_says_so(d):
    d.sandbox.exec(
        f"mkdir -p {d.dir}/many && cd {d.dir}/many && for i in $(seq 1 130); do touch f$i.txt; done"
    )
    result = run(d, "glob", pattern="*.txt", path=f"{d.dir}/many")
    assert result.metadata == {"count": 100, "truncated": True}
    assert result.output.endswith("(Results are truncated. Consider using a more specific path or pattern.)")


def test_bash_keeps_the_tail_of_a_huge_output_and_its_file_holds_every_byte(d):
    # 300,000 lines (about 2 MB): over the sandbox's capture cap, which drops the middle before the
    # worker sees it; the sandbox keeps the complete output in the file the model is pointed at.
    result = run(d, "bash", call_id="call_huge", command="seq 1 300000", description="Count far")
    assert result.metadata["truncated"] is True
    assert result.output.startswith("...298001 lines truncated...\n\n298002\n")
    assert "\n300000\n" in result.output and "dropped" not in result.output
    assert f"Full output saved to: {result.metadata['outputPath']}" in result.output
    whole = d.sandbox.read_bytes(result.metadata["outputPath"])
    assert whole == "".join(f"{i}\n" for i in range(1, 300001)).encode()


def test_bash_says_no_output_when_a_command_prints_nothing(d):
    result = run(d, "bash", command="true", description="Nothing")
    assert result.output == "(no output)" and result.metadata["truncated"] is False


@pytest.mark.django_db
def test_bash_commands_stop_at_the_projects_command_timeout(d, alice):
    from types import SimpleNamespace

    # A real project: bash reads its scoped secrets (none here) before the command runs.
    alice.project.command_timeout_s = 1
    alice.project.save(update_fields=["command_timeout_s"])
    session = SimpleNamespace(project=alice.project)
    started = time.monotonic()
    result = execute_tool(
        ALL["bash"],
        {"command": "sleep 20", "timeout": 60_000, "description": "Sleep long"},
        d.ctx(session=session),
    )
    assert "terminated command after exceeding timeout 1000 ms" in result.output
    assert result.metadata["status"] == "timeout"
    assert time.monotonic() - started < 15  # the model's 60 s was capped by the project's 1 s


def test_batch_runs_sub_calls_in_parallel_in_the_container(d):
    d.sandbox.write(f"{d.dir}/one.txt", "first\n")
    started = time.monotonic()
    result = run(
        d,
        "batch",
        tool_calls=[
            {"tool": "bash", "parameters": {"command": "sleep 1; echo slept", "description": "Sleep one"}},
            {
                "tool": "bash",
                "parameters": {"command": "sleep 1; echo slept too", "description": "Sleep two"},
            },
            {"tool": "read", "parameters": {"filePath": f"{d.dir}/one.txt"}},
            {"tool": "grep", "parameters": {"pattern": "first", "path": d.dir}},
        ],
    )
    assert time.monotonic() - started < 1.9  # two 1 s sleeps ran side by side
    assert result.metadata["successful"] == 4
    assert result.output.startswith("All 4 tools executed successfully.")


def test_apply_patch_adds_updates_moves_and_deletes_files(d):
    d.sandbox.write(f"{d.dir}/main.py", "def run():\n    return 1\n")
    d.sandbox.write(f"{d.dir}/old.txt", "bye\n")
    rel = d.dir.removeprefix("/workspace/")
    patch = (
        f"*** Begin Patch\n*** Add File: {rel}/new.txt\n+hello\n*** Update File: {rel}/main.py\n"
        f"*** Move to: {rel}/app.py\n@@ def run():\n-    return 1\n+    return 2\n"
        f"*** Delete File: {rel}/old.txt\n*** End Patch"
    )
    result = run(d, "apply_patch", patchText=patch)
    assert result.output == (
        f"Success. Updated the following files:\nA {rel}/new.txt\nM {rel}/app.py\nD {rel}/old.txt"
    )
    assert d.sandbox.read_bytes(f"{d.dir}/new.txt") == b"hello\n"
    assert d.sandbox.read_bytes(f"{d.dir}/app.py") == b"def run():\n    return 2\n"
    assert d.sandbox.stat(f"{d.dir}/main.py") is None and d.sandbox.stat(f"{d.dir}/old.txt") is None
    (ask,) = d.asked("edit")
    assert ask["patterns"] == [f"{rel}/new.txt", f"{rel}/app.py", f"{rel}/old.txt"]


def test_two_updates_of_one_file_in_one_patch_both_land(d):
    d.sandbox.write(f"{d.dir}/two.py", "a = 1\nb = 1\n")
    rel = d.dir.removeprefix("/workspace/")
    patch = (
        f"*** Begin Patch\n*** Update File: {rel}/two.py\n@@\n-a = 1\n+a = 2\n"
        f"*** Update File: {rel}/two.py\n@@\n-b = 1\n+b = 2\n*** End Patch"
    )
    result = run(d, "apply_patch", patchText=patch)
    assert d.sandbox.read_bytes(f"{d.dir}/two.py") == b"a = 2\nb = 2\n"
    assert [(f["additions"], f["deletions"]) for f in result.metadata["files"]] == [(1, 1), (1, 1)]


def test_apply_patch_that_does_not_fit_changes_nothing(d):
    d.sandbox.write(f"{d.dir}/f.py", "a\n")
    rel = d.dir.removeprefix("/workspace/")
    patch = f"*** Begin Patch\n*** Add File: {rel}/g.py\n+x\n*** Update File: {rel}/f.py\n@@\n-zzz\n+y\n*** End Patch"
    with pytest.raises(ToolError, match="apply_patch verification failed: Failed to find expected lines"):
        run(d, "apply_patch", patchText=patch)
    assert d.sandbox.stat(f"{d.dir}/g.py") is None


def test_long_bash_output_is_truncated_and_the_full_text_is_readable(d):
    result = run(d, "bash", call_id="call_longout", command="seq 1 5000", description="Print numbers")
    assert result.metadata["truncated"] is True
    assert "...3001 lines truncated..." in result.output
    saved = result.metadata["outputPath"]
    assert saved == "/tmp/hangar/tool-output/call_longout.txt"
    page = run(d, "read", filePath=saved, offset=4999, limit=5)
    assert "4999: 4999\n5000: 5000\n\n(End of file - total 5000 lines)" in page.output
    # Stored outside the workspace: the project's tree does not see it.
    assert "tool-output" not in run(d, "list").output


def test_invalid_runs_without_touching_the_container(d):
    result = run(d, "invalid", tool="Bash!", error="Unknown tool")
    assert result.output == "The arguments provided to the tool are invalid: Unknown tool"


@pytest.mark.django_db
def test_todowrite_and_todoread_in_a_docker_backed_context(d, alice):
    from hangar.conversations.services import session_create

    session = session_create(actor=alice.actor, project=alice.project)
    ctx = d.ctx(session=session)
    execute_tool(
        ALL["todowrite"], {"todos": [{"content": "a", "status": "pending", "priority": "high"}]}, ctx
    )
    assert execute_tool(ALL["todoread"], {}, ctx).metadata["todos"][0]["content"] == "a"
