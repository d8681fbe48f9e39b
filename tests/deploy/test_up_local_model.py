"""deploy/up.sh with the bundled model still building (its first start compiles for minutes): the banner
comes as soon as the web answers, the model's progress stays on the status line, and up keeps running
while the model's log is empty (a second run used to die silently there: `grep` on the emptied log under
`set -euo pipefail`). The script runs as written in a tree whose interpreter, web, worker and model are
stand-ins (tests/deploy/test_up_key_argv.py); the model's stand-in reports progress the way
deploy/local-model.sh does (deploy/model_progress.py) and never answers."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from tests.deploy.conftest import start_script
from tests.deploy.test_up_key_argv import standin_tree
from tests.engine.conftest import ROOT
from tests.opencode.live import free_port

MODEL_STANDIN = """#!/usr/bin/env bash
python3 deploy/model_progress.py start "$HANGAR_LOCAL_MODEL_STATUS" "http://127.0.0.1:$HANGAR_LOCAL_MODEL_PORT/v1" \\
  var/log/model.log 420
exec sleep 600
"""


def test_up_shows_the_banner_before_the_local_model_is_built_and_keeps_running_on_an_empty_model_log(
    tmp_path,
):
    script = standin_tree(tmp_path / "tree", (ROOT / "deploy" / "up.sh").read_text())
    tree = script.parent.parent
    (tree / "deploy" / "local-model.sh").write_text(MODEL_STANDIN)
    (tree / "deploy" / "local-model.sh").chmod(0o755)
    shutil.copy(ROOT / "deploy" / "model_progress.py", tree / "deploy")
    (tree / "platform" / "hangar").mkdir(parents=True)
    shutil.copy(ROOT / "platform" / "hangar" / "local_model.py", tree / "platform" / "hangar")
    (tree / "var" / "log").mkdir()
    (tree / "var" / "log" / "model.log").write_text("")  # the previous run's, emptied
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")},
        "HANGAR_SKIP_SETUP": "1",
        "PORT": str(free_port()),
        "HANGAR_LOCAL_MODEL_PORT": str(free_port()),
        "RECORD_DIR": str(tmp_path),
    }
    proc = start_script(script, env)
    lines: list[str] = []
    try:
        began = time.monotonic()
        banner = -1  # the model's line is shown after the banner (and may be before it too)
        while banner < 0 or not any("local model: installing" in line for line in lines[banner:]):
            line = proc.stdout.readline()
            assert line and time.monotonic() - began < 60, "up.sh exited early:\n" + "".join(lines)
            lines.append(line)
            if "Hangar is up" in line:
                banner = len(lines)
        text = "".join(lines)
        assert "about 7 min left (log: var/log/model.log)" in text
        time.sleep(12)  # past the old 10 s note, which read the empty log and died
        assert proc.poll() is None, "up.sh exited:\n" + text + proc.stdout.read()
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 130, text + rest
        assert not (tree / "var" / "local-model.json").exists()  # this run's report goes with it
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_the_build_report_counts_the_steps_and_trusts_the_pace_as_they_get_done(tmp_path):
    """deploy/model_progress.py: `start` estimates from the measured install time; `follow` copies the
    build's output (the log) and turns its [n/N] steps into progress and a time left that moves from the
    estimate to the pace."""
    status = tmp_path / "local-model.json"
    progress = [sys.executable, str(ROOT / "deploy" / "model_progress.py")]
    subprocess.run(
        [*progress, "start", str(status), "http://127.0.0.1:1/v1", "var/log/model.log", "600"], check=True
    )
    assert json.loads(status.read_text())["state"] == "installing"
    build = "".join(f"  [{n}/10] Building CXX object {n}.o\n" for n in range(1, 10))
    out = subprocess.run(
        [*progress, "follow", str(status)], input="pip says\n" + build, text=True, capture_output=True
    )
    assert out.stdout == "pip says\n" + build  # the log keeps every line
    report = json.loads(status.read_text())
    assert (report["state"], report["done"], report["total"]) == ("compiling", 9, 10)
    # 9/10 done at once: mostly the pace (~0 s a step + the install's tail), a tenth of the 600 s estimate.
    assert 30 <= report["eta"] - time.time() <= 30 + 61
    shown = subprocess.run(
        [*progress, "show", str(status)], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "compiling llama.cpp (9/10), about 2 min left"
