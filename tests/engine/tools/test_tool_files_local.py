"""read / write / edit rules and the permissions they ask, on a local-directory sandbox."""

import re

import pytest

from hangar.engine.tools.base import PermissionAsked, PermissionRejected, ToolError
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL


def run(harness, tool, **args):
    return execute_tool(ALL[tool], args, harness.ctx())


def test_read_numbers_lines_from_one_and_marks_the_file_read(local):
    local.sandbox.write("/workspace/a.py", "one\ntwo\nthree\n")
    result = run(local, "read", filePath="/workspace/a.py")
    assert result.output == (
        "<path>/workspace/a.py</path>\n<type>file</type>\n<content>\n1: one\n2: two\n3: three\n\n"
        "(End of file - total 3 lines)\n</content>"
    )
    assert result.title == "a.py"
    assert "/workspace/a.py" in local.read_paths
    assert local.asked("read") == [
        {"permission": "read", "patterns": ["/workspace/a.py"], "always": ["*"], "metadata": {}}
    ]


def test_read_pages_with_offset_and_limit_and_says_where_to_continue(local):
    local.sandbox.write("b.txt", "\n".join(f"l{i}" for i in range(1, 11)) + "\n")
    result = run(local, "read", filePath="b.txt", offset=4, limit=3)
    assert "4: l4\n5: l5\n6: l6\n\n(Showing lines 4-6 of 10. Use offset=7 to continue.)" in result.output
    with pytest.raises(ToolError, match="Offset 20 is out of range for this file \\(10 lines\\)"):
        run(local, "read", filePath="b.txt", offset=20)


def test_read_refuses_directories_binaries_and_missing_files(local):
    local.sandbox.mkdir("/workspace/src")
    local.sandbox.write("/workspace/blob.dat", b"\x00\x01\x02")
    with pytest.raises(ToolError, match="Path is a directory"):
        run(local, "read", filePath="/workspace/src")
    with pytest.raises(ToolError, match=re.escape("Cannot read binary file: /workspace/blob.dat")):
        run(local, "read", filePath="blob.dat")
    with pytest.raises(ToolError, match=re.escape("File not found: /workspace/nope.txt")):
        run(local, "read", filePath="nope.txt")


def test_write_creates_a_new_file_without_a_prior_read_and_asks_edit_with_its_path(local):
    result = run(local, "write", filePath="/workspace/pkg/new.py", content="print(1)\n")
    assert local.sandbox.read_bytes("/workspace/pkg/new.py") == b"print(1)\n"
    (ask,) = local.asked("edit")
    assert ask["patterns"] == ["pkg/new.py"] and ask["always"] == ["*"]
    assert "+print(1)" in ask["metadata"]["diff"]
    assert result.metadata["filediff"]["additions"] == 1 and result.metadata["filediff"]["status"] == "added"


def test_write_refuses_to_overwrite_a_file_it_has_not_read(local):
    local.sandbox.write("/workspace/keep.txt", "original\n")
    with pytest.raises(ToolError) as exc:
        run(local, "write", filePath="/workspace/keep.txt", content="clobbered\n")
    assert (
        str(exc.value)
        == "You must read file /workspace/keep.txt before overwriting it. Use the Read tool first"
    )
    assert local.sandbox.read_bytes("/workspace/keep.txt") == b"original\n"
    run(local, "read", filePath="/workspace/keep.txt")
    run(local, "write", filePath="/workspace/keep.txt", content="replaced\n")
    assert local.sandbox.read_bytes("/workspace/keep.txt") == b"replaced\n"


def test_edit_requires_a_prior_read_then_replaces_and_reports_a_diff(local):
    local.sandbox.write("/workspace/m.py", "def f():\n    return 1\n")
    with pytest.raises(ToolError, match=re.escape("You must read file /workspace/m.py before editing it")):
        run(local, "edit", filePath="/workspace/m.py", oldString="return 1", newString="return 2")
    run(local, "read", filePath="/workspace/m.py")
    result = run(local, "edit", filePath="/workspace/m.py", oldString="return 1", newString="return 2")
    assert result.output == "Edit applied successfully."
    assert local.sandbox.read_bytes("/workspace/m.py") == b"def f():\n    return 2\n"
    assert "-    return 1\n+    return 2" in result.metadata["diff"]
    assert local.asked("edit")[-1]["patterns"] == ["m.py"]


def test_edit_keeps_crlf_line_endings(local):
    local.sandbox.write("/workspace/win.txt", "first\r\nsecond\r\nthird\r\n")
    run(local, "read", filePath="/workspace/win.txt")
    run(local, "edit", filePath="/workspace/win.txt", oldString="first\nsecond", newString="uno\ndos\ntres")
    assert local.sandbox.read_bytes("/workspace/win.txt") == b"uno\r\ndos\r\ntres\r\nthird\r\n"


def test_edit_errors_use_opencodes_words(local):
    local.sandbox.write("/workspace/d.py", "x = 1\nx = 1\n")
    run(local, "read", filePath="/workspace/d.py")
    # OpenCode 1.18.33's three texts, exactly (issue 30: models are tuned on them).
    with pytest.raises(ToolError) as multiple:
        run(local, "edit", filePath="/workspace/d.py", oldString="x = 1", newString="x = 2")
    assert str(multiple.value) == (
        "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
    )
    with pytest.raises(ToolError) as missing:
        run(local, "edit", filePath="/workspace/d.py", oldString="y = 1", newString="x = 2")
    assert str(missing.value) == (
        "Could not find oldString in the file. It must match exactly, including whitespace, indentation, "
        "and line endings."
    )
    with pytest.raises(ToolError) as same:
        run(local, "edit", filePath="/workspace/d.py", oldString="x = 1", newString="x = 1")
    assert str(same.value) == "No changes to apply: oldString and newString are identical."
    run(local, "edit", filePath="/workspace/d.py", oldString="x = 1", newString="x = 2", replaceAll=True)
    assert local.sandbox.read_bytes("/workspace/d.py") == b"x = 2\nx = 2\n"


def test_a_pending_permission_stops_the_write_before_it_happens(local):
    local.policy["edit"] = "ask"
    with pytest.raises(PermissionAsked):
        run(local, "write", filePath="/workspace/p.txt", content="x")
    assert local.sandbox.stat("/workspace/p.txt") is None
    local.policy["edit"] = "deny"
    with pytest.raises(PermissionRejected):
        run(local, "write", filePath="/workspace/p.txt", content="x")
    assert local.sandbox.stat("/workspace/p.txt") is None


def test_bad_arguments_are_reported_by_name_for_the_model_to_fix(local):
    with pytest.raises(ToolError) as exc:
        run(local, "edit", filePath="/workspace/x", oldString="a")
    assert "The edit tool was called with invalid arguments" in str(exc.value)
    assert "newString: Field required" in str(exc.value)


def test_grep_prints_its_lines_as_opencode_1_18_33_does(local):
    local.sandbox.write("/workspace/src/a.py", "x = 1\n# TODO: a\n")
    local.sandbox.write("/workspace/src/b.py", "# TODO: b\n")
    result = run(local, "grep", pattern="TODO", path="/workspace/src")
    header, files = result.output.split("\n", 1)
    assert header == "Found 2 matches"
    assert sorted(files.split("\n\n")) == [  # a blank line between files (newest file first)
        "/workspace/src/a.py:\n  Line 2: # TODO: a",
        "/workspace/src/b.py:\n  Line 1: # TODO: b",
    ]
    for number in range(120):
        local.sandbox.write(f"/workspace/many/f{number}.txt", "needle\n")
    many = run(local, "grep", pattern="needle", path="/workspace/many")
    assert many.output.startswith("Found 100 matches (more matches available)\n")
    assert many.output.endswith("\n\n(Results truncated. Consider using a more specific path or pattern.)")
    assert run(local, "grep", pattern="absent").output == "No files found"


def test_an_unknown_skill_lists_the_available_ones_before_any_permission_is_asked(local):
    local.sandbox.write(
        "/workspace/.opencode/skills/release/SKILL.md", "---\ndescription: Ship\n---\nTag it.\n"
    )
    local.sandbox.write(
        "/workspace/.opencode/skills/lint/SKILL.md", "---\ndescription: Lint\n---\nRun ruff.\n"
    )
    local.sandbox.write("/workspace/.opencode/skills/release/scripts/tag.sh", "git tag v1\n")
    with pytest.raises(ToolError) as exc:
        run(local, "skill", name="deploy")
    assert str(exc.value) == 'Skill "deploy" not found. Available skills: lint, release'
    assert local.asked("skill") == []
    loaded = run(local, "skill", name="release")
    assert "Base directory for this skill: /workspace/.opencode/skills/release\n" in loaded.output
    assert "file://" not in loaded.output
    assert loaded.output.endswith(
        "Note: file list is sampled.\n\n<skill_files>\n"
        "<file>/workspace/.opencode/skills/release/scripts/tag.sh</file>\n</skill_files>\n</skill_content>"
    )
    assert [a["patterns"] for a in local.asked("skill")] == [["release"]]
