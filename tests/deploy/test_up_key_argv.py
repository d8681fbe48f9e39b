"""Low: deploy/up.sh hands the model key to bootstrap in the environment, never on a command line (every
user on the machine reads command lines in `ps`). The script runs as written, in a copy of the tree whose
interpreter, web and worker are stand-ins: the interpreter records bootstrap's argv and environment."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.deploy.conftest import start_script
from tests.engine.conftest import ROOT
from tests.opencode.live import free_port

KEY = "sk-test-DO-NOT-LEAK-4242"

PYTHON_STANDIN = """#!/usr/bin/env bash
if [ "$1" = manage.py ] && [ "$2" = bootstrap ]; then
  printf '%s\\n' "$@" > "$RECORD_DIR/argv"
  env > "$RECORD_DIR/env"
  echo '{"email": "d@x.test", "password": null, "url": "http://x", "token": "t", "opencode_url": "http://x/oc/1"}'
  exit 0
fi
if [ "$1" = -m ] && [ "$2" = celery ]; then exec sleep 600; fi
exec python3 "$@"
"""

WEB_STANDIN = """#!/usr/bin/env bash
exec python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$4"
"""


def standin_tree(root: Path, up_script: str) -> Path:
    (root / "deploy").mkdir(parents=True)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "var").mkdir()
    for path, text in (
        (root / "deploy" / "up.sh", up_script),
        (root / ".venv" / "bin" / "python", PYTHON_STANDIN),
        (root / "deploy" / "run-web.sh", WEB_STANDIN),
        (root / "deploy" / "run-worker.sh", "#!/usr/bin/env bash\nexec sleep 600\n"),
        (root / "deploy" / "setup.sh", "#!/usr/bin/env bash\nexit 0\n"),
    ):
        path.write_text(text)
        path.chmod(0o755)
    return root / "deploy" / "up.sh"


def run_up(tmp_path: Path, up_script: str) -> tuple[list[str], dict[str, str]]:
    """Run up.sh until its banner; bootstrap's (argv, environment)."""
    script = standin_tree(tmp_path / "tree", up_script)
    record = tmp_path / "record"
    record.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")},
        "HANGAR_SKIP_SETUP": "1",
        "PORT": str(free_port()),
        "HANGAR_MODEL_API_BASE": "http://127.0.0.1:9/v1",
        "HANGAR_MODEL_API_KEY": KEY,
        "RECORD_DIR": str(record),
    }
    proc = start_script(script, env)
    try:
        deadline, lines = time.monotonic() + 60, []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "up.sh exited early:\n" + "".join(lines)
            lines.append(line)
            if "Hangar is up" in line:
                break
        else:
            raise AssertionError("no banner:\n" + "".join(lines))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    argv = (record / "argv").read_text().splitlines()
    environ = dict(line.split("=", 1) for line in (record / "env").read_text().splitlines() if "=" in line)
    return argv, environ


def test_up_passes_the_model_key_in_the_environment_not_on_the_command_line(tmp_path):
    assert shutil.which("setsid") and shutil.which("curl")
    argv, environ = run_up(tmp_path, (ROOT / "deploy" / "up.sh").read_text())
    assert argv[:2] == ["manage.py", "bootstrap"] and "--api-base" in argv
    assert not any(KEY in arg for arg in argv), argv
    assert environ.get("HANGAR_BOOTSTRAP_API_KEY") == KEY
