"""deploy/up.sh as a team runs it, twice, with a model configured the documented way
(HANGAR_MODEL_API_BASE, here the scripted server) and the caller's umask 077 (up's own once reached the
worker, and every clone failed in the git jail): the banner, the API, a repository cloned by up's worker,
a prompt answered; Ctrl-C stops every process and the sandbox; the second run (which once died silently
on an empty model log) serves the same session again."""

import json
import os
import re
import signal
import socket
import subprocess
import time

import docker
import httpx
import pytest

from sandbox import containers
from scripted_llm.server import ScriptedServer
from tests.deploy.conftest import start_script
from tests.deploy.test_up import children_of_groups
from tests.engine.conftest import ROOT, destroy_sandboxes
from tests.opencode.live import free_port
from tests.repos.gitserver import GitServer

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(420)]


class Up:
    def __init__(self, env: dict):
        self.lines: list[str] = []
        self.proc = start_script(
            ROOT / "deploy" / "up.sh",
            env,
            cwd=ROOT,
            umask=0o077,
        )

    def banner(self, timeout: float = 180) -> dict:
        """Read until the banner's last line; its fields."""
        deadline, fields = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            assert line, "up.sh exited early:\n" + "".join(self.lines[-40:])
            self.lines.append(line)
            match = re.match(r"\s+(Hangar is up|Login|API token|OpenCode URL):\s+(\S+)", line)
            if match:
                fields[match[1]] = match[2]
            if "Ctrl-C stops everything" in line:
                return fields
        raise AssertionError("no banner:\n" + "".join(self.lines[-40:]))

    def interrupt(self) -> list[str]:
        groups = [
            int(p) for p in subprocess.check_output(["pgrep", "-P", str(self.proc.pid)], text=True).split()
        ]
        assert len(children_of_groups(groups)) >= 3  # web, worker, beat (each its own group)
        self.proc.send_signal(signal.SIGINT)
        rest, _ = self.proc.communicate(timeout=60)
        self.lines.append(rest)
        assert self.proc.returncode == 130, "".join(self.lines[-40:])
        assert children_of_groups(groups) == []
        return rest.splitlines()

    def kill(self) -> None:
        """After a failure: up's own stop if it still can, else every group it started (each is a session
        of its own: killing up's group alone would leave them running)."""
        if self.proc.poll() is not None:
            return
        groups = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            for pgid in [int(p) for p in groups.split()] + [self.proc.pid]:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def wait_for(fetch, done, timeout: float = 120, what: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fetch()
        if done(value):
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: {value}")


def test_up_twice_serves_a_cloned_repository_and_ctrl_c_stops_everything(django_db_setup, tmp_path):
    from django.conf import settings

    git = GitServer(tmp_path / "git", users={}).start()
    scripted = ScriptedServer().start()
    made: list[str] = []
    up = None
    try:
        git.create("public/team.git", {"README.md": "# the team's repository\n"})
        script_id = f"up-{os.urandom(4).hex()}"
        httpx.post(
            f"http://127.0.0.1:{scripted.port}/_scripts",
            json={"id": script_id, "turns": [[{"text": "answered under up"}]], "title": "t", "loop": True},
        ).raise_for_status()
        port = free_port()
        env = {
            **os.environ,
            "PORT": str(port),
            "HANGAR_SKIP_SETUP": "1",  # deploy/test.sh has just run it
            "HANGAR_MODEL_API_BASE": scripted.url,
            "HANGAR_MODEL": script_id,
            "HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1",  # the git server is on loopback
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{settings.DATABASES['default']['NAME']}",
        }
        base = f"http://127.0.0.1:{port}/api/orgs/demo/projects/"

        # First run: the banner, then a repository cloned by up's worker and a prompt answered.
        began = time.monotonic()
        up = Up(env)
        banner = up.banner()
        first_banner_s = time.monotonic() - began
        api = httpx.Client(headers={"Authorization": f"Bearer {banner['API token']}"}, timeout=30)
        assert api.get(f"http://127.0.0.1:{port}/api/health").status_code == 200
        project = api.get(base).json()
        project = next(p for p in (project["results"] if isinstance(project, dict) else project))
        one = f"{base}{project['id']}/"
        response = api.patch(one, json={"repo_url": git.url("public/team.git")})
        assert response.status_code == 200, response.text
        response = api.post(f"{one}sessions/", json={"title": "under up"})
        assert response.status_code == 201, response.text
        session = f"{one}sessions/{response.json()['id']}/"
        made.append(response.json()["id"])
        workspace = wait_for(
            lambda: api.get(f"{session}workspace/").json(),
            lambda w: w["state"] in ("ready", "failed"),
            what="the clone",
        )
        assert workspace["state"] == "ready", workspace

        def answered(n: int) -> None:
            assert (
                api.post(f"{session}prompt/", json={"parts": [{"type": "text", "text": "hi"}]}).status_code
                == 202
            )
            wait_for(
                lambda: api.get(f"{session}messages/").text,
                lambda text: text.count("answered under up") >= n,
                what="the answer",
            )

        answered(1)
        said = up.interrupt()
        assert any(re.search(r"sandboxes: [1-9]\d* stopped", line) for line in said), said
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        name = containers.session_container_name(made[0])
        assert docker.from_env().containers.get(name).status != "running"
        mode = (ROOT / "var" / "bootstrap.json").stat().st_mode
        assert mode & 0o077 == 0, oct(mode)  # holds a token: nobody else reads it

        # Second run: no password again, the same session resumes with its workspace.
        up = Up(env)
        banner = up.banner()
        assert "--reset-password" in "".join(up.lines)
        api.headers["Authorization"] = f"Bearer {banner['API token']}"
        answered(2)
        assert (
            "the team's repository" in api.get(f"{session}workspace/file/", params={"path": "README.md"}).text
        )
        up.interrupt()
        print(json.dumps({"first_banner_s": round(first_banner_s, 1)}))
    finally:
        if up is not None:
            up.kill()
        destroy_sandboxes(made)
        git.stop()
        scripted.stop()
