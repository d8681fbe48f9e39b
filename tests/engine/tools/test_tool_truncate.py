"""Output over 2000 lines or 50 KB keeps a preview; the full text is saved for the read tool."""

from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.read import ReadTool
from hangar.engine.tools.truncate import MAX_BYTES, OUTPUT_DIR, truncate_output


def test_small_output_is_left_alone(local):
    result = truncate_output("short", call_id="c1", sandbox=local.sandbox)
    assert (result.content, result.truncated) == ("short", False)


def test_too_many_lines_keep_the_first_and_last_1000_and_save_the_whole(local):
    text = "\n".join(f"line {i}" for i in range(5000))
    result = truncate_output(text, call_id="call_many", sandbox=local.sandbox)
    assert result.truncated and result.output_path == f"{OUTPUT_DIR}/call_many.txt"
    head, rest = result.content.split("\n\n...3000 lines truncated...\n\n")
    assert head.split("\n") == [f"line {i}" for i in range(1000)]
    assert rest.split("\n\n")[0].split("\n") == [f"line {i}" for i in range(4000, 5000)]
    assert f"Full output saved to: {OUTPUT_DIR}/call_many.txt" in result.content
    assert local.sandbox.read_bytes(result.output_path).decode() == text


def test_tail_truncation_keeps_the_last_2000_lines_after_the_count(local):
    text = "\n".join(f"line {i}" for i in range(5000))
    result = truncate_output(text, call_id="call_tail", sandbox=local.sandbox, direction="tail")
    assert result.content.startswith("...3000 lines truncated...\n\nline 3000\n")
    assert "line 4999\n\nThe tool call succeeded but the output was truncated." in result.content
    assert "line 2999\n" not in result.content


def test_a_cut_output_is_counted_against_its_complete_size_and_its_saved_file_is_kept(local):
    local.sandbox.write(f"{OUTPUT_DIR}/spilled.txt", "the whole thing")
    cut = "\n".join(f"l{i}" for i in range(3000))  # what reached the worker of a 9,000-line output
    result = truncate_output(
        cut,
        call_id="call_cut",
        sandbox=local.sandbox,
        direction="tail",
        total=(90_000, 9000),
        saved_path=f"{OUTPUT_DIR}/spilled.txt",
    )
    assert result.content.startswith("...7000 lines truncated...\n\nl1000\n")
    assert result.output_path == f"{OUTPUT_DIR}/spilled.txt"
    assert local.sandbox.read_bytes(result.output_path) == b"the whole thing"  # not overwritten


def test_too_many_bytes_are_cut_at_50_kb(local):
    text = "\n".join("x" * 999 for _ in range(100))  # 100 KB in 100 lines
    result = truncate_output(text, call_id="call/../bytes", sandbox=local.sandbox)
    assert "bytes truncated..." in result.content
    assert len(result.content.encode()) < MAX_BYTES + 1024
    assert result.output_path == f"{OUTPUT_DIR}/call_.._bytes.txt"  # the call id cannot climb out


def test_execute_tool_truncates_a_tools_output_and_read_can_page_through_it(local):
    big = "\n".join(f"row {i}" for i in range(3000))

    class Shout:
        name, description = "shout", "test"
        parameters = ReadTool.parameters

        def execute(self, args, ctx):
            from hangar.engine.tools.base import ToolResult

            return ToolResult(title="t", output=big)

    result = execute_tool(Shout(), {"filePath": "x"}, local.ctx(call_id="call_big"))
    assert result.metadata["truncated"] is True
    saved = result.metadata["outputPath"]
    page = execute_tool(ReadTool(), {"filePath": saved, "offset": 2501, "limit": 2}, local.ctx())
    assert "2501: row 2500\n2502: row 2501" in page.output
