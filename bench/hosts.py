"""Two sandbox hosts on this machine for the agent benches' `--hosts 2` (docs/scale-out.md, "Two hosts"):
host B's dockerd, a host service per host, and what makes a process an engine worker of two hosts."""

from __future__ import annotations

import atexit
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import ROOT, log, rss_mb, stop

NO_DOCKER = "unix:///nonexistent/docker.sock"
# What makes a process an engine worker of two hosts: it acquires sandboxes through the host queues and
# talks to the agents over the TCP channel (docs/scale-out.md, "The host queues").
REMOTE_ENV = {"HANGAR_SANDBOX_REMOTE": "1", "HANGAR_AGENT_TRANSPORT": "tcp"}


def container_memory_mb(pid: int) -> float:
    """Memory in use by a container's cgroup (v1), found from its init process."""
    with open(f"/proc/{pid}/cgroup") as f:
        path = next(line.split(":", 2)[2].strip() for line in f if line.split(":")[1] == "memory")
    return int(Path(f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes").read_text()) / 2**20


class TwoHosts:
    """Two sandbox hosts on this machine (docs/scale-out.md, "Two hosts"): host B up (deploy/hosts/hostb.sh),
    a host service for A (this machine's engine) and one for B, each a Celery worker consuming only
    host.<name>, both registered before this returns. Engine workers started with `engine_env()` hold no
    Docker socket. `env`: the bench's environment (its database, its warm-pool setting)."""

    def __init__(self, env: dict[str, str]) -> None:
        from hangar.conversations.host_selectors import host_named
        from hangar.conversations.models import SandboxHost

        # The bench database's hosts of earlier runs are gone, but their rows would still draw placements
        # (nothing here runs beat's sweep that marks them lost): only this run's hosts are registered.
        SandboxHost.objects.all().delete()
        script = str(ROOT / "deploy" / "hosts" / "hostb.sh")
        subprocess.run([script, "up"], check=True, capture_output=True)
        b_env = dict(
            line.split("=", 1) for line in subprocess.check_output([script, "env"], text=True).split()
        )
        root = os.environ.get("HANGAR_SANDBOX_ROOT", "/var/lib/hangar").rstrip("/")
        tag = uuid.uuid4().hex[:6]
        self.logs = Path(tempfile.mkdtemp(prefix="hangar-hosts-"))
        self.names = {"a": f"bench-a-{tag}", "b": f"bench-b-{tag}"}
        self.roots = {"a": Path(root), "b": Path(f"{root}-hostb")}
        self.docker_hosts = {
            "a": env.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
            "b": b_env["DOCKER_HOST"],
        }
        own = {
            "a": {},
            "b": b_env
            | {"HANGAR_SANDBOX_ROOT": str(self.roots["b"]), "HANGAR_AGENT_SUBNET": "10.213.x.0/24"},
        }
        base = {k: v for k, v in env.items() if k != "HANGAR_SANDBOX_REMOTE"}
        base |= {"HANGAR_AGENT_TRANSPORT": "tcp", "HANGAR_HOST_HEARTBEAT_S": "1"}
        self.services = {}
        for h, name in self.names.items():
            command = [sys.executable, "-m", "celery", "-A", "hangar", "worker", "--pool", "threads"]
            command += [
                "--concurrency",
                "16",
                "-Q",
                f"host.{name}",
                "-n",
                f"{name}@%h",
                "--loglevel",
                "WARNING",
            ]
            self.services[h] = subprocess.Popen(
                [*command, "--without-gossip", "--without-mingle"],
                cwd=ROOT,
                env=base | own[h] | {"HANGAR_SANDBOX_HOST": name},
                stdout=(self.logs / f"host-{h}.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        atexit.register(self.stop)  # a bench that fails half-way leaves no host service running
        self.engine_root = tempfile.mkdtemp(prefix="hangar-engine-root-")
        self.peak_rss = {h: 0.0 for h in self.names}
        deadline = time.monotonic() + 120
        while not all(host_named(n) for n in self.names.values()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the host services did not register (logs in {self.logs})")
            time.sleep(0.2)

    def engine_env(self) -> dict[str, str]:
        """An engine worker's additions: remote, no Docker socket, an empty sandbox root of its own."""
        return REMOTE_ENV | {
            "DOCKER_HOST": NO_DOCKER,
            "HANGAR_SANDBOX_ROOT": self.engine_root,
            "HANGAR_SANDBOX_HOST": f"engine-{self.names['a']}",
        }

    def sample(self) -> None:
        """Record each host service's RSS (its process tree), keeping the peak."""
        for h, proc in self.services.items():
            self.peak_rss[h] = max(self.peak_rss[h], rss_mb(proc.pid))

    def acting_as(self, h: str):
        """This process as host `h`'s service for the sandbox library (its sandbox root); a context."""
        import contextlib

        from sandbox import volumes

        @contextlib.contextmanager
        def switch():
            before, volumes.ROOT = volumes.ROOT, self.roots[h]
            try:
                yield
            finally:
                volumes.ROOT = before

        return switch()

    def client(self, h: str):
        import docker

        return docker.DockerClient(base_url=self.docker_hosts[h])

    def report(self, session_ids: list[str]) -> dict:
        """Per host: sessions placed there, its service's peak RSS, and the memory of its sandboxes of
        `session_ids` now (their containers' memory cgroups)."""
        from hangar.conversations.models import Session
        from sandbox import containers

        placed = Session.objects.filter(pk__in=session_ids).values_list("sandbox_host", flat=True)
        out = {}
        for h, name in self.names.items():
            with self.acting_as(h):  # a container's name holds its host's sandbox-root tag
                names = {containers.session_container_name(s) for s in session_ids}
            api, used = self.client(h).api, []
            for found in api.containers(filters={"name": containers.SESSION_PREFIX}):
                if found["Names"][0].lstrip("/") in names:
                    used.append(container_memory_mb(api.inspect_container(found["Id"])["State"]["Pid"]))
            out[name] = {
                "sessions_placed": sum(1 for p in placed if p == name),
                "service_rss_mb": round(self.peak_rss[h], 1),
                "sandboxes_running": len(used),
                "sandbox_memory_mb_total": round(sum(used), 1),
                "sandbox_memory_mb_median": round(statistics.median(used), 1) if used else None,
            }
        return out

    def provision(self, fn, sessions: list, wave: int = 8) -> None:
        """`fn(session)` for every session, `wave` at a time, each wave after both hosts' next heartbeat:
        placement reads each host's per-org count from its heartbeat, so without it a burst of placements
        would all see the same counts and land on one host."""
        from concurrent.futures import ThreadPoolExecutor

        from django.utils import timezone

        from hangar.conversations.models import SandboxHost

        def beaten_since(moment) -> bool:
            rows = SandboxHost.objects.filter(name__in=self.names.values(), heartbeat_at__gt=moment)
            return rows.count() == len(self.names)

        with ThreadPoolExecutor(wave) as pool:
            for start in range(0, len(sessions), wave):
                list(pool.map(fn, sessions[start : start + wave]))
                done, deadline = timezone.now(), time.monotonic() + 10
                while time.monotonic() < deadline and not beaten_since(done):
                    time.sleep(0.1)

    def destroy(self, session_ids: list[str]) -> None:
        """Destroy the sessions' sandboxes through their hosts' queues (the services must be up)."""
        from concurrent.futures import ThreadPoolExecutor

        from hangar.engine.workspace.remote import remote_destroy

        def one(session_id: str) -> None:
            try:
                remote_destroy(session_id)
            except Exception as exc:
                log(f"could not remove the sandbox of {session_id}: {exc!r}")

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, session_ids))

    def drain_pools(self) -> None:
        """Remove both hosts' unclaimed warm-pool containers."""
        from sandbox import WarmPool

        for h in self.names:
            with self.acting_as(h):
                WarmPool(0, client=self.client(h)).drain()

    def stop(self) -> None:
        from hangar.conversations.models import SandboxHost

        for proc in self.services.values():
            stop(proc, timeout=30)
        SandboxHost.objects.filter(name__in=self.names.values()).delete()
