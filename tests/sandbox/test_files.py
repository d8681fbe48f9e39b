"""Files: OpenCode's read/list/glob/grep rules, atomic writes, binary transfer."""

import os
import time

import pytest

from sandbox.protocol import FileNotFound, SandboxError


def test_write_then_read_roundtrips_text_and_creates_parents(shared_box):
    shared_box.write("deep/er/note.txt", "alpha\nbeta\n")
    result = shared_box.read("deep/er/note.txt")
    assert result.content == "alpha\nbeta"
    assert (result.total_lines, result.offset, result.truncated, result.binary) == (2, 0, False, False)


def test_read_pages_with_offset_and_limit(shared_box):
    shared_box.write("many.txt", "".join(f"line {i}\n" for i in range(3000)))
    first = shared_box.read("many.txt")
    assert first.content.count("\n") == 1999 and first.truncated and first.total_lines == 3000
    page = shared_box.read("many.txt", offset=2990, limit=5)
    assert page.content.splitlines() == [f"line {i}" for i in range(2990, 2995)] and page.truncated


def test_read_cuts_long_lines_at_2000_chars(shared_box):
    shared_box.write("long.txt", "x" * 5000 + "\n")
    assert shared_box.read("long.txt").content == "x" * 2000 + "..."


def test_read_detects_binary_files(shared_box):
    shared_box.write("blob.dat2", bytes(range(256)) * 4)
    assert shared_box.read("blob.dat2").binary


def test_binary_content_roundtrips_exactly(shared_box):
    payload = os.urandom(100_000)
    shared_box.write("bin/random.bin", payload)
    assert shared_box.read_bytes("bin/random.bin") == payload


def test_reading_a_missing_file_raises_file_not_found(shared_box):
    with pytest.raises(FileNotFound):
        shared_box.read("does/not/exist.txt")


def test_stat_reports_type_size_and_absence(shared_box):
    shared_box.write("s/file.txt", "12345")
    st = shared_box.stat("s/file.txt")
    assert (st.type, st.size, st.path) == ("file", 5, "/workspace/s/file.txt")
    assert shared_box.stat("s").type == "dir"
    assert shared_box.stat("s/missing") is None


def test_list_is_a_tree_that_skips_ignored_dirs_and_caps_at_100(box):
    box.write("src/app.py", "x")
    box.write("node_modules/pkg/index.js", "x")
    box.write("__pycache__/a.pyc", "x")
    paths, truncated = box.list()
    assert paths == ["src/", "src/app.py"] and not truncated
    box.exec("mkdir many && cd many && touch $(seq 1 150)")
    paths, truncated = box.list()
    assert truncated and len([p for p in paths if not p.endswith("/")]) == 100


def test_glob_finds_newest_first(box):
    box.write("a/old.py", "x")
    time.sleep(0.02)  # a later modification time: the order under test, not a wait
    box.write("b/new.py", "x")
    box.write("c/other.txt", "x")
    paths, truncated = box.glob("**/*.py")
    assert paths == ["/workspace/b/new.py", "/workspace/a/old.py"] and not truncated


def test_grep_groups_matches_by_file_with_line_numbers(box):
    box.write("one.py", "import os\nTODO first\nTODO second\n")
    box.write("two.txt", "TODO elsewhere\n")
    matches, truncated = box.grep("TODO", include="*.py")
    assert [(m.path, m.line, m.text) for m in matches] == [
        ("/workspace/one.py", 2, "TODO first"),
        ("/workspace/one.py", 3, "TODO second"),
    ]
    assert not truncated
    box.exec("for i in $(seq 1 150); do echo TODO >> big.txt; done")
    matches, truncated = box.grep("TODO")
    assert len(matches) == 100 and truncated


def test_mkdir_move_and_remove(box):
    box.mkdir("x/y")
    box.write("x/y/f.txt", "data")
    box.move("x/y/f.txt", "z/moved.txt")
    assert box.stat("x/y/f.txt") is None and box.read("z/moved.txt").content == "data"
    box.remove("x")
    assert box.stat("x") is None
    with pytest.raises(SandboxError):
        box.move("nothing", "else")


def test_write_is_atomic_for_concurrent_readers(box):
    box.write("atomic.txt", "A" * 100_000)
    script = "for i in $(seq 1 200); do c=$(cat atomic.txt); n=${#c}; [ $n -eq 100000 ] || echo BAD $n; done"
    import threading

    reader = threading.Thread(target=lambda: results.append(box.exec(script).output))
    results: list[str] = []
    reader.start()
    for ch in "BCDEFGHIJ":
        box.write("atomic.txt", ch * 100_000)
    reader.join()
    assert "BAD" not in results[0]
