"""deploy/compose.yaml (docs/scale-out.md, "The seam: three roles"), checked offline: `docker-compose config`
(Debian's docker-compose, installed by deploy/setup.sh) validates the file against the Compose schema and
resolves its anchors and variables, with an empty .env beside a copy of it (no secret is read); the
resolved services then keep the split's promises: the engine worker holds no Docker socket, runs as a
non-root uid with HANGAR_SANDBOX_REMOTE=1 and the TCP channel; the host service alone holds the socket
and gets no provider-key setting; web and beat get no socket either."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose.yaml"
SOCKET = "/var/run/docker.sock"
# Settings that carry or point at a model provider's credentials: the engine worker's alone.
PROVIDER = re.compile(r"API_KEY|OPENAI|ANTHROPIC|GEMINI|AZURE|BEDROCK|AWS_|MODEL_API|LOCAL_MODEL|PROVIDER")


@pytest.fixture(scope="module")
def services(tmp_path_factory) -> dict:
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose is not installed (deploy/setup.sh installs it)"
    tree = tmp_path_factory.mktemp("compose")
    (tree / "deploy").mkdir()
    shutil.copy(COMPOSE, tree / "deploy" / "compose.yaml")
    (tree / ".env").write_text("")  # env_file: ../.env, empty: no secret of this machine is read
    done = subprocess.run(
        [binary, "-f", str(tree / "deploy" / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},  # the defaults of the file, not this shell's HANGAR_* settings
    )
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)["services"]
    assert isinstance(resolved, dict)
    return resolved


def _mounts(service: dict) -> list[str]:
    found = []
    for volume in service.get("volumes") or []:
        found.append(volume if isinstance(volume, str) else str(volume.get("source", "")))
    return found


def _uid(service: dict) -> str:
    return str(service.get("user", "")).split(":")[0]


def test_the_roles_are_all_there(services):
    assert {"postgres", "redis", "migrate", "web", "worker", "host", "beat"} <= set(services)
    assert services["worker"]["command"] == ["bash", "deploy/run-worker.sh"]
    assert services["host"]["command"] == ["bash", "deploy/run-host.sh"]


def test_the_engine_worker_has_no_docker_socket_and_is_not_root(services):
    worker = services["worker"]
    assert not any(SOCKET in mount or "docker" in mount for mount in _mounts(worker)), worker.get("volumes")
    assert "DOCKER_HOST" not in worker["environment"]
    uid = _uid(worker)
    assert uid.isdigit() and int(uid) != 0, worker.get("user")  # a real uid, not a name that may be root
    assert not worker.get("privileged")
    assert "ALL" in (worker.get("cap_drop") or [])
    assert "no-new-privileges:true" in (worker.get("security_opt") or [])
    assert not worker.get("group_add")  # not the socket's group either
    env = worker["environment"]
    assert env["HANGAR_SANDBOX_REMOTE"] == "1"
    assert env["HANGAR_AGENT_TRANSPORT"] == "tcp"


def test_only_the_host_service_holds_the_socket_and_it_gets_no_provider_key(services):
    holders = sorted(name for name, s in services.items() if any(SOCKET in m for m in _mounts(s)))
    assert holders == ["host"]
    host = services["host"]
    env = host["environment"]
    assert env["HANGAR_AGENT_TRANSPORT"] == "tcp"  # engine workers reach its agents over the channel
    assert env.get("HANGAR_SANDBOX_REMOTE", "") in ("", "0")  # it is the host, not a remote worker
    assert not [name for name in env if PROVIDER.search(name)], sorted(env)
    # Its sandbox root is the host's own path (the engine bind-mounts workspaces from it), shared both ways.
    root = env["HANGAR_SANDBOX_ROOT"]
    assert f"{root}:{root}:rshared" in _mounts(host)
