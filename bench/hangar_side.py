"""The Hangar side of bench/agent_step.py: Daphne and one Celery worker started as deployed
(deploy/run-web.sh, deploy/run-worker.sh) on the bench database, its two projects (256 MB workspaces and
the default settings), the warm pool, and `--hosts 2`'s two sandbox hosts (hosts.TwoHosts)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import common
from common import ROOT, bench_env, bench_tenant, free_port, log, open_bench_db, stop, tree_cpu_s, wait_port
from hosts import TwoHosts

PROJECT_256, PROJECT_DEFAULT = "bench-256mb", "default"
PROJECTS = (PROJECT_256, PROJECT_DEFAULT)


class Hangar:
    def __init__(self, scripted: common.Scripted, hosts: int = 1):
        self.env = bench_env(HANGAR_ENGINE_QUEUE=f"bench-{uuid.uuid4().hex[:6]}")
        open_bench_db(self.env)
        self.rig = TwoHosts(self.env) if hosts == 2 else None
        self.scripted = scripted
        self.token, self.projects = self._tenant()
        self.procs: list[subprocess.Popen] = []
        self._drainer: Any = None  # a WarmPool, made at the first drain
        self.logs = Path(tempfile.mkdtemp(prefix="hangar-bench-"))
        self.procs.append(
            subprocess.Popen(  # the worker as deployed (threads, its DB pool), on its own queue
                [str(ROOT / "deploy" / "run-worker.sh"), "--without-gossip", "--without-mingle"],
                cwd=ROOT,
                env={
                    **self.env,
                    **(self.rig.engine_env() if self.rig else {}),
                    "HANGAR_PYTHON": sys.executable,
                    "HANGAR_WORKER_CONCURRENCY": "8",
                    "HANGAR_LOG_LEVEL": "WARNING",
                },
                stdout=(self.logs / "worker.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        self.port = free_port()
        self.procs.append(
            subprocess.Popen(  # the web as deployed (its DB pool), with this interpreter
                [str(ROOT / "deploy" / "run-web.sh"), "-b", "127.0.0.1", "-p", str(self.port)],
                cwd=ROOT,
                env={**self.env, "HANGAR_PYTHON": sys.executable},
                stdout=(self.logs / "daphne.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        wait_port(self.port, self.procs[-1], "daphne")
        self.bases = {name: f"http://127.0.0.1:{self.port}/oc/{p.pk}" for name, p in self.projects.items()}

    def _tenant(self):
        from hangar.accounts import tokens
        from hangar.accounts.models import ApiToken

        actor, project = bench_tenant(self.scripted.url, "bench")  # 256 MB workspaces
        _actor, default = bench_tenant(self.scripted.url, "bench-default", disk_mb=None)
        raw, prefix = tokens.generate()
        ApiToken.objects.create(
            org_id=actor.org_id, user=actor.user, name="bench", prefix=prefix, digest=tokens.digest(raw)
        )
        return raw, {PROJECT_256: project, PROJECT_DEFAULT: default}

    def use_script(self, script_id: str) -> None:
        for project in self.projects.values():
            project.default_model = f"scripted/{script_id}"
            project.save(update_fields=["default_model", "updated_at"])

    def started_warm(self, session_id: str) -> bool:
        """The session's sandbox was claimed from the warm pool (the host registry's record says so)."""
        from sandbox import registry, volumes

        if self.rig:  # the registry of the host it was placed on
            for h in self.rig.names:
                with self.rig.acting_as(h):
                    if record := registry.lookup(volumes.session_key(session_id)):
                        return bool(record.get("pooled"))
            return False
        record = registry.lookup(volumes.session_key(session_id)) or {}
        return bool(record.get("pooled"))

    def placed(self) -> dict[str, int]:
        """Sessions of the bench's projects on each of the two hosts."""
        from hangar.conversations.models import Session

        mine = Session.objects.filter(project__in=list(self.projects.values()))
        assert self.rig is not None
        return {name: mine.filter(sandbox_host=name).count() for name in self.rig.names.values()}

    def drain_pool(self) -> None:
        """Remove every unclaimed pooled container: the next session starts cold."""
        from sandbox import WarmPool

        if self.rig:
            self.rig.drain_pools()
        else:
            drainer = self._drainer = self._drainer or WarmPool(0)
            drainer.drain()

    def cpu_s(self) -> list[float]:
        """CPU seconds so far of the web (Daphne) and the worker, each with its children."""
        worker, web = self.procs
        return [tree_cpu_s(web.pid), tree_cpu_s(worker.pid)]

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            stop(proc)
        self._remove_sandboxes()

    def _remove_sandboxes(self) -> None:
        """The bench's sessions' sandboxes and the worker's warm pool: nothing is left running."""
        from hangar.conversations.models import Session
        from sandbox import DockerSandboxes, WarmPool

        projects = list(self.projects.values())
        if self.rig:
            mine = Session.objects.filter(project__in=projects, sandbox_host__in=self.rig.names.values())
            self.rig.destroy(list(mine.values_list("pk", flat=True)))
            self.rig.drain_pools()
            self.rig.stop()
            return
        sandboxes = DockerSandboxes()
        for session_id in Session.objects.filter(project__in=projects).values_list("pk", flat=True):
            try:
                sandboxes.destroy(session_id)
            except Exception as exc:
                log(f"could not remove the sandbox of {session_id}: {exc!r}")
        WarmPool(0).drain()
