"""deploy/up.sh as a new user runs it: the banner comes once the web server answers, a second run
points to --reset-password (not to a file without the password), and Ctrl-C (SIGINT) or TERM stops
every process it started. The bundled model is skipped (HANGAR_LOCAL_MODEL=0): its wait is the same
loop on another URL."""

import json
import os
import signal
import socket
import stat
import subprocess
import time
import urllib.request

import pytest
from django.core.management import call_command

from tests.deploy.conftest import start_script
from tests.engine.conftest import ROOT
from tests.opencode.live import free_port

pytestmark = pytest.mark.django_db


def children_of_groups(pids: list[int]) -> list[int]:
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    pgid = int(f.read().rsplit(")", 1)[1].split()[2])
            except (OSError, ValueError, IndexError):
                continue
            if pgid in pids:
                alive.append(int(entry))
    return alive


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "term"])
def test_up_prints_the_banner_once_the_web_answers_and_a_signal_stops_everything(sig, django_db_setup):
    from django.conf import settings

    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "HANGAR_LOCAL_MODEL": "0",
        "HANGAR_SKIP_SETUP": "1",  # deploy/test.sh has just run it
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{settings.DATABASES['default']['NAME']}",
    }
    proc = start_script(ROOT / "deploy" / "up.sh", env, cwd=ROOT)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "up.sh exited early:\n" + "".join(lines[-40:])
            lines.append(line)
            if "Hangar is up" in line:
                # The banner comes after the web server answered, never before.
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) as r:
                    assert r.status == 200
                break
        else:
            raise AssertionError("no banner:\n" + "".join(lines[-40:]))
        assert any("web server answers" in x for x in lines)
        groups = [int(p) for p in subprocess.check_output(["pgrep", "-P", str(proc.pid)], text=True).split()]
        assert len(children_of_groups(groups)) >= 3  # web, worker, beat (each its own group)
        mode = stat.S_IMODE((ROOT / "var" / "bootstrap.json").stat().st_mode)
        assert mode & 0o077 == 0, oct(mode)  # holds a token: nobody else reads it

        proc.send_signal(sig)
        proc.wait(timeout=40)
        assert children_of_groups(groups) == []
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_second_bootstrap_shows_no_password_and_reset_prints_a_new_one_that_works(capsys):
    from django.contrib.auth import authenticate

    def boot(*extra) -> dict:
        call_command("bootstrap", "--json", "--email", "demo@x.test", "--org", "d", "--project", "d", *extra)
        return json.loads(capsys.readouterr().out)

    first = boot()
    assert first["password"]
    assert boot()["password"] is None
    reset = boot("--reset-password")
    assert reset["password"] and reset["password"] != first["password"]
    assert authenticate(email="demo@x.test", password=reset["password"]) is not None
    assert authenticate(email="demo@x.test", password=first["password"]) is None


def test_health_reports_whether_the_bundled_model_answers(client, settings, alice):
    import http.server
    import threading

    client.force_login(alice.user)  # the checks are the signed-in detail; anyone else gets liveness

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings.MODEL_HEALTH_URL = f"http://127.0.0.1:{server.server_port}/"
        assert client.get("/api/health").json()["checks"]["model"]["status"] == "ok"
    finally:
        server.shutdown()
        server.server_close()
    settings.MODEL_HEALTH_URL = f"http://127.0.0.1:{free_port()}/v1/models"
    assert client.get("/api/health").json()["checks"]["model"]["status"] == "error"
    settings.MODEL_HEALTH_URL = ""
    assert "model" not in client.get("/api/health").json()["checks"]
