"""A warm pool of generic, started sandboxes that a session can claim in a few milliseconds.

Pooled containers (`hangar-pool-<volume>`, label hangar.pool=1) carry no tenant data: no env,
an empty fresh workspace volume of their own. Claiming one binds it to a session:
  1. an atomic claim marker (O_EXCL file next to its volume) so two processes, or two pools,
     can never hand the same container to two sessions (docker rename alone is not enough:
     concurrent renames of one container both succeed, one after the other);
  2. `docker rename` to the session's name, which is how every process finds it afterwards
     (labels cannot be changed; the name and the host registry carry the binding);
  3. the registry record maps the session to the container's volume, which becomes the
     session's workspace; 4. the session's env is bound through the agent.
Any process may claim any pooled container; the pool refills in a background thread.

A claim costs a handful of Docker calls, so it avoids the rest: it tries the containers this
pool made first (it knows their ids: no listing, no inspect) and hands over the connection it
warmed them with (no attach; the env is still bound by `_attach`). Those idle connections let
go of the attach lock, so a claimer in another process attaches as usual; the claimer takes the
lock back before it sends anything. Only when its own are gone does a claim list the others.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator

import docker
import docker.errors

from sandbox import budget, containers, volumes
from sandbox.connection import AgentConnection
from sandbox.docker_backend import DockerSandbox
from sandbox.image import ensure_image
from sandbox.manager import DockerSandboxes, local_api
from sandbox.protocol import SandboxSpec

log = logging.getLogger(__name__)
POOL_LABEL = "hangar.pool"
IMAGE_LABEL = "hangar.image"
ROOT_LABEL = "hangar.root"
# Limits that are fixed at container creation; a spec must match them to use the pool.
FIXED_FIELDS = ("image", "cpus", "memory_mb", "pids", "disk_mb", "network")


class WarmPool:
    def __init__(
        self,
        size: int = 2,
        *,
        template: SandboxSpec | None = None,
        client: docker.DockerClient | None = None,
        image: str | None = None,
        extra_labels: dict[str, str] | None = None,
        budget_limits: budget.Limits | None = None,
    ) -> None:
        self.size = size
        self.budget_limits = budget_limits  # None: from the environment at each fill
        self.template = template or SandboxSpec(session_id="pool")
        if self.template.network != "none":
            # An allowlist sandbox needs its own network and proxy, made for its session: cold path.
            raise ValueError("the warm pool holds network='none' sandboxes only")
        self.client = client or docker.from_env()
        self.api = local_api(self.client)
        self.image = image or ensure_image(self.client)
        # Pooled containers name the sandbox root whose volumes they hold: two installations (or two
        # engineers' test runs) sharing one dockerd must never claim each other's containers, whose
        # volumes live under another root ("volume ... has no image").
        self.extra_labels = {ROOT_LABEL: volumes.root_tag(), **dict(extra_labels or {})}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fill_lock = threading.Lock()
        # Containers this pool made and warmed, oldest first: id -> (name, idle agent connection).
        self._warm: OrderedDict[str, tuple[str, AgentConnection]] = OrderedDict()
        self._warm_lock = threading.Lock()
        self._pids: dict[str, int] = {}  # container id -> its init's host pid, learnt while warming

    # --- filling ----------------------------------------------------------------------------

    @property
    def pooled_image(self) -> str:
        return self.template.image or self.image

    def _label_filter(self, *, current_image: bool = True) -> list[str]:
        # Only containers of the image this pool runs now: after an upgrade, a container started from the
        # old image (an older in-container agent) must never be handed to a session.
        image = [f"{IMAGE_LABEL}={self.pooled_image}"] if current_image else []
        return [f"{POOL_LABEL}=1", *image] + [f"{k}={v}" for k, v in self.extra_labels.items()]

    def available(self) -> list[str]:
        """Names of unclaimed, running pooled containers (oldest first)."""
        found = self.api.containers(filters={"label": self._label_filter(), "status": "running"})
        names = [c["Names"][0].lstrip("/") for c in sorted(found, key=lambda c: c["Created"])]
        return [n for n in names if n.startswith(containers.POOL_PREFIX)]

    def retire_stale(self) -> int:
        """Remove unclaimed pooled containers of any other image (left by an older release)."""
        found = self.api.containers(all=True, filters={"label": self._label_filter(current_image=False)})
        stale = [
            c["Names"][0].lstrip("/") for c in found if c["Labels"].get(IMAGE_LABEL) != self.pooled_image
        ]
        stale = [n for n in stale if n.startswith(containers.POOL_PREFIX)]
        for name in stale:
            self._remove_unclaimed(name)
        return len(stale)

    def fill(self) -> int:
        """Create pooled containers until `size` are available. Returns how many were added."""
        with self._fill_lock:
            self.retire_stale()
            available = self.available()
            self._drop_warm(keep=set(available))
            missing = self.size - len(available)
            for _ in range(max(missing, 0)):
                self._add_one()
            return max(missing, 0)

    def _add_one(self) -> None:
        volume_id = volumes.new_volume_id()
        with budget.reserving():
            budget.check(self.template.disk_mb, limits=self.budget_limits)  # unclaimed: no org yet
            volumes.create_volume(volume_id, self.template.disk_mb)
        name = containers.POOL_PREFIX + volume_id
        kwargs = containers.create_kwargs(
            self.template,
            self.pooled_image,
            name,
            volume_id,
            self.extra_labels | {POOL_LABEL: "1", IMAGE_LABEL: self.pooled_image},
        )
        container = self.client.containers.create(**kwargs)
        container.start()
        # Warm the agent (python imports, first fork, the snapshot repo) and keep the connection for
        # a claimer in this process, without the lock: a claimer elsewhere attaches itself.
        conn = AgentConnection.open(self.api, container.id, str(volumes.lock_path(container.id)))
        try:
            conn.call("exec", {"command": "true"}, timeout=30)
            conn.call("snapshot_init", timeout=30)
        except BaseException:
            conn.close()
            raise
        conn.release_lock()
        pid = self.api.inspect_container(container.id)["State"]["Pid"]  # off the claim's path
        with self._warm_lock:
            self._warm[container.id] = (name, conn)
            self._pids[container.id] = pid

    def _drop_warm(self, keep: set[str] | None = None) -> None:
        """Close the idle connections of containers no longer available (claimed elsewhere, removed)."""
        with self._warm_lock:
            gone = [
                cid
                for cid, (name, conn) in self._warm.items()
                if keep is None or name not in keep or conn.dead
            ]
            dropped = [self._warm.pop(cid)[1] for cid in gone]
            self._pids = {cid: pid for cid, pid in self._pids.items() if cid in self._warm}
        for conn in dropped:
            conn.close()

    def start(self) -> None:
        """Refill in the background: at once, after every claim, and every few seconds."""
        if self._thread:
            return
        self._thread = threading.Thread(target=self._run, name="warm-pool", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(30)
            self._thread = None
        self._drop_warm()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.fill()
            except Exception:  # keep refilling; the cold path still works meanwhile
                log.exception("warm pool refill failed")
            self._wake.wait(5)
            self._wake.clear()

    def drain(self) -> None:
        """Remove every unclaimed pooled container and its volume."""
        self._drop_warm()
        for name in self.available():
            self._remove_unclaimed(name)

    def _remove_unclaimed(self, name: str) -> None:
        volume_id = name[len(containers.POOL_PREFIX) :]
        if self._take(volume_id):  # a claimer that got there first keeps it
            try:
                container_id = self.api.inspect_container(name)["Id"]
                self.api.remove_container(container_id, force=True)
                volumes.lock_path(container_id).unlink(missing_ok=True)
            except docker.errors.NotFound:
                pass
            volumes.destroy_volume(volume_id)

    # --- claiming ---------------------------------------------------------------------------

    def fits(self, spec: SandboxSpec) -> bool:
        # Pooled containers have no network at all; never hand one to an allowlist spec.
        return spec.network == "none" and all(
            getattr(spec, f) == getattr(self.template, f) for f in FIXED_FIELDS
        )

    @staticmethod
    def _take(volume_id: str) -> bool:
        """Atomically mark a pooled volume as claimed; False if someone else got it first."""
        try:
            os.close(os.open(volumes.claim_marker(volume_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            return False

    def _candidates(self) -> Iterator[tuple[str, str, AgentConnection | None]]:
        """(id, name, warm connection or None): this pool's own first, then any other, oldest first."""
        tried = set()
        while True:
            with self._warm_lock:
                if not self._warm:
                    break
                container_id, (name, conn) = self._warm.popitem(last=False)
            if conn.dead:  # stopped, removed, or the daemon restarted: the listing decides
                conn.close()
                continue
            tried.add(container_id)
            yield container_id, name, conn
        found = self.api.containers(filters={"label": self._label_filter(), "status": "running"})
        for c in sorted(found, key=lambda c: c["Created"]):
            name = c["Names"][0].lstrip("/")
            if c["Id"] in tried or not name.startswith(containers.POOL_PREFIX):
                continue
            with self._warm_lock:  # made by this pool while we were claiming
                warm = self._warm.pop(c["Id"], None)
            yield c["Id"], name, warm[1] if warm else None

    def _give_back(self, container_id: str, name: str, conn: AgentConnection | None) -> None:
        if conn is not None:
            conn.release_lock()
            with self._warm_lock:
                self._warm[container_id] = (name, conn)
                self._warm.move_to_end(container_id, last=False)

    def claim(self, manager: DockerSandboxes, spec: SandboxSpec) -> DockerSandbox | None:
        """Bind a pooled container to `spec.session_id`, or None (no fit, none left, or the session
        got a sandbox meanwhile: the caller then reconnects to it)."""
        if not self.fits(spec):
            return None
        name = containers.session_container_name(spec.session_id)
        key = volumes.session_key(spec.session_id)
        for container_id, pooled, conn in self._candidates():
            volume_id = pooled[len(containers.POOL_PREFIX) :]
            if not self._take(volume_id):
                if conn is not None:
                    conn.close()  # claimed (or being drained) by another process
                continue
            if conn is not None and not conn.take_lock(str(volumes.lock_path(container_id))):
                conn.close()  # cannot happen while we hold the claim marker; attach afresh if it does
                conn = None
            try:
                self.api.rename(container_id, name)
            except docker.errors.NotFound:
                if conn is not None:
                    conn.close()
                continue  # removed meanwhile
            except docker.errors.APIError as exc:
                os.unlink(volumes.claim_marker(volume_id))  # still pooled: leave it claimable
                self._give_back(container_id, pooled, conn)
                if exc.status_code == 409:  # the session already has a container
                    return None
                raise
            record = {
                "session_id": spec.session_id,
                "volume": volume_id,
                "org_id": spec.org_id,
                "project_id": spec.project_id,
                "spec": dataclasses.asdict(spec),
                "pooled": True,
            }
            if not volumes.register(key, record):
                # Registered by a racing cold create whose container lost the name to us: the
                # record names its volume; drop that orphan volume, keep ours.
                stale = volumes.lookup(key) or {}
                volumes.unregister(key)
                if stale.get("volume") and stale["volume"] != volume_id:
                    volumes.destroy_volume(stale["volume"])
                volumes.register(key, record)
            self._wake.set()
            with self._warm_lock:
                pid = self._pids.pop(container_id, 0)
            volumes.note_container(key, container_id, pid)  # another process's first contact needs no inspect
            return manager._attach(spec, name, container_id, conn)
        self._wake.set()
        return None
