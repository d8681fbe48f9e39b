"""Shadow-git snapshots, the interactive pty, and the agent's resilience to garbage."""

import json
import threading
import time

import pytest

from sandbox.protocol import SandboxError


def test_snapshot_track_diff_revert_and_restore(box):
    box.write("keep.txt", "v1\n")
    box.write("gone.txt", "bye\n")
    before = box.snapshot_track()
    assert before == box.snapshot_track()  # unchanged tree, same hash
    box.write("keep.txt", "v2\nmore\n")
    box.remove("gone.txt")
    box.write("added.txt", "new\n")
    after = box.snapshot_track()
    diffs = {d.path: d for d in box.snapshot_diff(before, after)}
    assert diffs["keep.txt"].before == "v1\n" and diffs["keep.txt"].after == "v2\nmore\n"
    assert (diffs["keep.txt"].additions, diffs["keep.txt"].deletions) == (2, 1)
    assert diffs["gone.txt"].status == "deleted" and diffs["added.txt"].status == "added"
    assert sorted(box.snapshot_changed(before, after)) == ["added.txt", "gone.txt", "keep.txt"]
    assert box.snapshot_changed(after, after) == []
    box.snapshot_revert(before, ["keep.txt", "added.txt"])
    assert box.read("keep.txt").content == "v1" and box.stat("added.txt") is None
    box.snapshot_restore(before)
    assert box.read("gone.txt").content == "bye"


def test_a_deleted_then_recreated_file_and_a_new_subdirectory_are_tracked(box):
    box.write("dir/a.txt", "a\n")
    first = box.snapshot_track()
    box.remove("dir/a.txt")
    box.write("dir/sub/b.txt", "b\n")
    second = box.snapshot_track()
    assert sorted(box.snapshot_changed(first, second)) == ["dir/a.txt", "dir/sub/b.txt"]
    box.write("dir/a.txt", "again\n")
    assert box.snapshot_changed(second, box.snapshot_track()) == ["dir/a.txt"]


def test_revert_refuses_paths_that_climb_out_of_the_workspace(box):
    base = box.snapshot_track()
    box.exec("echo keep > /home/hangar/.hangar/outside.txt")
    for sneaky in (
        "a/../../home/hangar/.hangar/outside.txt",
        "../home/hangar/.hangar/outside.txt",
        "/home/hangar/.hangar/outside.txt",
    ):
        with pytest.raises(SandboxError, match="outside the workspace"):
            box.snapshot_revert(base, [sneaky])
    assert box.exec("cat /home/hangar/.hangar/outside.txt").output.strip() == "keep"


def test_snapshot_repo_lives_outside_the_workspace_and_skips_huge_files(box):
    box.exec("head -c 3000000 /dev/zero > huge.bin; echo small > small.txt")
    base = box.snapshot_track()
    box.exec("echo changed > small.txt; head -c 3000001 /dev/zero > huge.bin")
    paths = [d.path for d in box.snapshot_diff(base)]
    assert paths == ["small.txt"]
    assert box.stat(".git") is None and box.stat("/home/hangar/.hangar/snapshot/HEAD").type == "file"
    box.snapshot_gc()


def test_snapshot_diff_rejects_bad_hashes(shared_box):
    with pytest.raises(SandboxError):
        shared_box.snapshot_diff("not-a-hash; rm -rf /")


def test_pty_runs_an_interactive_shell_that_can_be_resized_and_closed(shared_box):
    out: list[str] = []
    pty = shared_box.open_pty(out.append, cols=100, rows=30)
    pty.write("stty size; echo marker-$((6*7))\n")
    deadline = time.monotonic() + 20  # generous: a loaded 2-core machine
    while "marker-42" not in "".join(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "30 100" in "".join(out) and "marker-42" in "".join(out)
    pty.resize(120, 40)
    pty.write("stty size\n")
    while "40 120" not in "".join(out) and time.monotonic() < deadline + 20:
        time.sleep(0.05)
    assert "40 120" in "".join(out)
    pty.write("exit 7\n")
    assert pty.wait(5) == 7


def test_pty_close_ends_the_shell(shared_box):
    pty = shared_box.open_pty(lambda s: None)
    pty.close()
    assert pty.wait(5) is not None


def test_closing_a_pty_right_after_opening_it_ends_the_shell_and_never_the_agent(box):
    # forkpty's child is in the agent's process group until its setsid(): a close in that window used to
    # SIGHUP the agent itself, and the container with it. And the handle could be released before it
    # knew its own id: the close then named no pty and the shell lived on.
    agent = box.ping()["pid"]
    for _ in range(100):
        pty = box.open_pty(lambda s: None)
        pty.close()
        assert pty.wait(5) is not None
    assert box.ping()["pid"] == agent


def test_agent_survives_garbage_and_answers_every_malformed_request(shared_box):
    conn = shared_box.connection
    replies: list[dict] = []
    # Raw lines straight onto the wire: not JSON, not objects, no id, unknown op, wrong types.
    garbage = [
        b"\x00\xff\xfe garbage\n",
        b"[1,2,3]\n",
        b'{"op":"exec"}\n',
        b"{\n",
        b"null\n",
        b'{"id":"g1","op":"launch_missiles"}\n',
        b'{"id":"g2","op":"read"}\n',
        b'{"id":"g3","op":"read","path":42}\n',
        b'{"id":"g4","op":"exec","command":["ls"]}\n',
        b'{"id":"g5","op":"write","path":"x","data":"!!not base64!!"}\n',
        b'{"id":"g6","op":"read","path":"f","offset":"ten"}\n',
        b"\n" * 3,
        bytes(range(256)) + b"\n",
    ]
    with conn._send_lock:
        for line in garbage:
            conn.sock.sendall(line)
    for op, args in [
        ("exec", {"command": "echo alive"}),
        ("cancel", {}),
        ("pty_write", {"target": "nope", "data": "x"}),
        ("grep", {"pattern": "("}),
        ("list", {"path": "/nonexistent"}),
    ]:
        try:
            replies.append({"ok": conn.call(op, args)})
        except SandboxError as exc:
            replies.append({"error": str(exc)})
    assert replies[0] == {
        "ok": {
            "status": "exited",
            "exit_code": 0,
            "output": "alive\n",
            "dropped_bytes": 0,
            "total_bytes": 6,
            "total_lines": 2,
            "full_output_path": None,
        }
    }
    assert all("error" in r for r in replies[1:])
    assert shared_box.exec("echo still alive").output == "still alive\n"
    json.dumps(replies)


def test_fifty_concurrent_calls_share_one_connection(shared_box):
    results: dict[int, str] = {}

    def work(i: int) -> None:
        if i % 2:
            results[i] = shared_box.exec(f"sleep 0.2; echo {i}").output.strip()
        else:
            shared_box.write(f"conc/{i}.txt", str(i) * 5000)
            results[i] = shared_box.read(f"conc/{i}.txt").content[: len(str(i))]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(50)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: str(i) for i in range(50)}
    assert time.monotonic() - start < 5  # the sleeps overlapped instead of queueing
