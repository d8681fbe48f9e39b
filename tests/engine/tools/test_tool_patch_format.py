"""apply_patch's format: parsing the sections and applying update hunks."""

import pytest

from hangar.engine.tools.patch import PatchError, apply_chunks, parse_patch

PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# Title
+body
*** Delete File: old.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ def run():
-    return 1
+    return 2
*** End Patch"""


def test_it_parses_add_delete_and_update_with_move():
    add, delete, update = parse_patch(PATCH)
    assert (add.type, add.path, add.contents) == ("add", "docs/new.md", "# Title\nbody")
    assert (delete.type, delete.path) == ("delete", "old.txt")
    assert (update.type, update.path, update.move_path) == ("update", "src/app.py", "src/main.py")
    assert update.chunks[0].context == "def run():"
    assert (update.chunks[0].old_lines, update.chunks[0].new_lines) == (["    return 1"], ["    return 2"])


def test_it_accepts_a_heredoc_wrapped_patch():
    wrapped = "cat <<'EOF'\n" + PATCH + "\nEOF"
    assert [h.type for h in parse_patch(wrapped)] == ["add", "delete", "update"]


def test_it_rejects_text_without_begin_and_end_markers():
    with pytest.raises(PatchError, match="missing Begin/End markers"):
        parse_patch("*** Add File: a\n+x")


def test_an_update_seeks_its_context_line_then_replaces_the_hunk():
    original = "def a():\n    return 1\n\ndef run():\n    return 1\n"
    (update,) = parse_patch(
        "*** Begin Patch\n*** Update File: f.py\n@@ def run():\n-    return 1\n+    return 2\n*** End Patch"
    )
    assert (
        apply_chunks("f.py", original, update.chunks)
        == "def a():\n    return 1\n\ndef run():\n    return 2\n"
    )


def test_an_update_tolerates_trailing_whitespace_and_unicode_punctuation():
    original = "msg = \u201chello\u201d   \nend\n"
    (update,) = parse_patch(
        '*** Begin Patch\n*** Update File: f\n@@\n-msg = "hello"\n+msg = "bye"\n end\n*** End Patch'
    )
    assert apply_chunks("f", original, update.chunks) == 'msg = "bye"\nend\n'


def test_an_end_of_file_hunk_anchors_at_the_last_lines():
    original = "x\ny\nx\ny\n"
    (update,) = parse_patch(
        "*** Begin Patch\n*** Update File: f\n@@\n x\n-y\n+z\n*** End of File\n*** End Patch"
    )
    assert update.chunks[0].end_of_file
    assert apply_chunks("f", original, update.chunks) == "x\ny\nx\nz\n"


def test_a_hunk_that_does_not_fit_is_an_error():
    (update,) = parse_patch("*** Begin Patch\n*** Update File: f\n@@\n-nope\n+yes\n*** End Patch")
    with pytest.raises(PatchError, match="Failed to find expected lines in f"):
        apply_chunks("f", "a\nb\n", update.chunks)
