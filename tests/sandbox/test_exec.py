"""Commands: output, exit codes, env, cwd, streaming, cap, timeout and cancel."""

import threading
import time

from sandbox.protocol import SandboxError


def test_exec_returns_output_and_exit_code(shared_box):
    result = shared_box.exec("echo hello; echo oops >&2; exit 3")
    assert result.status == "exited"
    assert result.exit_code == 3
    assert "hello" in result.output and "oops" in result.output


def test_exec_runs_as_the_unprivileged_user_in_the_workspace(shared_box):
    assert shared_box.exec("id -u; pwd").output.split() == ["1000", "/workspace"]


def test_exec_honours_cwd_and_env(shared_box):
    shared_box.mkdir("sub/dir")
    result = shared_box.exec("pwd; echo $GREETING", cwd="sub/dir", env={"GREETING": "hi"})
    assert result.output.split() == ["/workspace/sub/dir", "hi"]


def test_exec_in_a_missing_cwd_is_an_error(shared_box):
    try:
        shared_box.exec("true", cwd="/nope")
    except SandboxError as exc:
        assert "cwd" in str(exc)
    else:
        raise AssertionError("expected SandboxError")


def test_exec_streams_output_as_it_comes(shared_box):
    seen: list[tuple[float, str]] = []
    start = time.monotonic()
    result = shared_box.exec(
        "echo one; sleep 0.5; echo two", on_output=lambda s: seen.append((time.monotonic(), s))
    )
    assert result.exit_code == 0
    assert "one" in seen[0][1]
    assert seen[0][0] - start < 0.4  # the first line arrived before the command finished
    assert "".join(s for _, s in seen) == result.output


def test_exec_caps_output_keeping_head_and_tail(shared_box):
    result = shared_box.exec("seq 1 200000", max_output=10_000)
    assert result.dropped_bytes > 1_000_000
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.rstrip().endswith("200000")
    assert len(result.output) < 12_000


def test_exec_timeout_kills_the_whole_process_group(shared_box):
    start = time.monotonic()
    result = shared_box.exec("sleep 100 & sleep 100; echo never", timeout_s=0.5)
    assert result.status == "timeout" and result.exit_code is None
    assert time.monotonic() - start < 5
    assert "sleep 100" not in shared_box.exec("ps -eo args").output


def test_exec_can_be_cancelled(shared_box):
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    result = shared_box.exec("sleep 30", cancel=cancel)
    assert result.status == "cancelled"
    assert time.monotonic() - start < 3


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(shared_box):
    start = time.monotonic()
    result = shared_box.exec("trap '' TERM; while true; do sleep 0.1; done", timeout_s=0.3)
    assert result.status == "timeout"
    assert time.monotonic() - start < 6
    assert "while true" not in shared_box.exec("ps -eo args").output


def test_background_children_do_not_hang_exec(shared_box):
    start = time.monotonic()
    result = shared_box.exec("(sleep 5 >/dev/null 2>&1 &); echo done")
    assert result.output.strip() == "done"
    assert time.monotonic() - start < 2
