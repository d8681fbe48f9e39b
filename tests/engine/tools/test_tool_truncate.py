"""Output over 2000 lines or 50 KB keeps a preview; the full text is saved for the read tool."""

from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.read import ReadTool
from hangar.engine.tools.truncate import MAX_BYTES, OUTPUT_DIR, truncate_output


def test_small_output_is_left_alone(local):
    result = truncate_output("short", call_id="c1", sandbox=local.sandbox)
    assert (result.content, result.truncated) == ("short", False)


def test_too_many_lines_keep_the_first_2000_and_save_the_rest(local):
    text = "\n".join(f"line {i}" for i in range(5000))
    result = truncate_output(text, call_id="call_many", sandbox=local.sandbox)
    assert result.truncated and result.output_path == f"{OUTPUT_DIR}/call_many.txt"
    assert result.content.startswith("line 0\n") and "line 1999\n" in result.content
    assert "line 2000\n" not in result.content
    assert "...3000 lines truncated..." in result.content
    assert f"Full output saved to: {OUTPUT_DIR}/call_many.txt" in result.content
    assert local.sandbox.read_bytes(result.output_path).decode() == text


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
