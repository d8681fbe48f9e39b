"""A warm pool of generic, started sandboxes that a session can claim in a few milliseconds.

Pooled containers (`hangar-pool-<volume>`, label hangar.pool=1) carry no tenant data: no env,
an empty fresh workspace volume of their own. Claiming one binds it to a session (the binding steps
are `pool_claim.py`'s; this module keeps the inventory, picks the candidates and refills):
  1. an atomic claim marker (O_EXCL file next to its volume) so two processes, or two pools,
     can never hand the same container to two sessions (docker rename alone is not enough:
     concurrent renames of one container both succeed, one after the other);
  2. `docker rename` to the session's name, which is how every process finds it afterwards
     (labels cannot be changed; the name and the host registry carry the binding);
  3. the registry record maps the session to the container's volume, which becomes the
     session's workspace; 4. the session's env is bound through the agent.
Any process may claim any pooled container; the pool refills in a background thread.

Every project warm: a claim whose memory, CPUs or pids differ from the template's is sized at claim time
(`docker update`, one call, before the container is bound); the image and the workspace quota are fixed
when a container is made, so the pool keeps containers of each shape (image, quota) that sessions asked
for lately, as many as they were claimed (`pool_demand.py`: the demand is the host's). A claim of a shape
never asked for is cold once, and warm from the pool's next refill (which the miss wakes).

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
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors

from sandbox import budget, channel, containers, pool_demand, registry, volumes
from sandbox.connection import AgentConnection
from sandbox.docker_backend import DockerSandbox
from sandbox.image import ensure_image
from sandbox.manager import DockerSandboxes, local_api
from sandbox.pool_claim import claim_marker_take, claim_register, limits_differ, size_to, sized_back
from sandbox.pool_demand import DEMAND_WINDOW_S, Shape
from sandbox.protocol import SandboxSpec

log = logging.getLogger(__name__)
POOL_LABEL = "hangar.pool"
IMAGE_LABEL = "hangar.image"
ROOT_LABEL = "hangar.root"
DISK_LABEL = "hangar.disk_mb"

__all__ = ["DEMAND_WINDOW_S", "WarmPool"]


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
        # Containers this pool made and warmed, oldest first: id -> (name, idle agent connection, shape).
        self._warm: OrderedDict[str, tuple[str, AgentConnection, Shape]] = OrderedDict()
        self._warm_lock = threading.Lock()
        self._pids: dict[str, int] = {}  # container id -> its init's host pid, learnt while warming
        self._asked: list[tuple[Shape, float]] = []  # claims not yet written to the host's demand record

    # --- shapes -----------------------------------------------------------------------------

    @property
    def pooled_image(self) -> str:
        return self.template.image or self.image

    def shape_of(self, spec: SandboxSpec) -> Shape:
        return Shape(None if spec.image in (None, "", self.image) else spec.image, spec.disk_mb)

    @property
    def template_shape(self) -> Shape:
        return self.shape_of(self.template)

    def _image_of(self, shape: Shape) -> str:
        return shape.image or self.image

    def _demand_dir(self) -> Path:
        return pool_demand.directory(self.extra_labels)

    def _container_shape(self, labels: dict[str, str]) -> Shape | None:
        """A pooled container's shape from its labels; None for one made before shapes were labelled, or
        without the agent channel a tcp host needs (sandbox/channel.py): neither is wanted, both retire."""
        if channel.enabled() and labels.get(channel.LABEL) != "1":
            return None
        try:
            disk_mb = int(labels[DISK_LABEL])
        except (KeyError, ValueError):
            return None
        image = labels.get(IMAGE_LABEL, "")
        return Shape(None if image == self.image else image, disk_mb)

    def _label_filter(self, shape: Shape | None = None) -> list[str]:
        # With a shape: only containers of the image it runs now: after an upgrade, a container started from
        # the old image (an older in-container agent) must never be handed to a session.
        only = [f"{IMAGE_LABEL}={self._image_of(shape)}", f"{DISK_LABEL}={shape.disk_mb}"] if shape else []
        if shape and channel.enabled():
            only.append(f"{channel.LABEL}=1")
        return [f"{POOL_LABEL}=1", *only] + [f"{k}={v}" for k, v in self.extra_labels.items()]

    # --- filling ----------------------------------------------------------------------------

    def _listing(self, *, running: bool = True) -> list[tuple[str, Shape | None]]:
        """(name, shape) of pooled containers of this pool's labels, oldest first."""
        found = self.api.containers(
            all=not running,
            filters={"label": self._label_filter()} | ({"status": "running"} if running else {}),
        )
        out = []
        for c in sorted(found, key=lambda c: c["Created"]):
            name = c["Names"][0].lstrip("/")
            if name.startswith(containers.POOL_PREFIX):
                out.append((name, self._container_shape(c["Labels"])))
        return out

    def available(self, shape: Shape | None = None, *, all_shapes: bool = False) -> list[str]:
        """Names of unclaimed, running pooled containers of `shape` (default: the template's; every shape
        with `all_shapes`), oldest first."""
        shape = shape or self.template_shape
        return [name for name, s in self._listing() if all_shapes or s == shape]

    def retire_stale(self, wanted: dict[Shape, int] | None = None) -> int:
        """Remove unclaimed pooled containers of a shape no longer wanted: another image (left by an older
        release) or a quota nobody asked for lately."""
        wanted = self.targets() if wanted is None else wanted
        stale = [name for name, shape in self._listing(running=False) if shape not in wanted]
        for name in stale:
            self._remove_unclaimed(name)
        return len(stale)

    def targets(self) -> dict[Shape, int]:
        return pool_demand.targets(self._demand_dir(), self.template_shape, self.size)

    def _flush_demand(self) -> None:
        with self._warm_lock:
            asked, self._asked = self._asked, []
        by_shape: dict[Shape, list[float]] = {}
        for shape, stamp in asked:
            by_shape.setdefault(shape, []).append(stamp)
        for shape, stamps in by_shape.items():
            pool_demand.record(self._demand_dir(), shape, stamps)

    def fill(self) -> int:
        """Create pooled containers until each wanted shape has its count available. Returns how many were
        added."""
        with self._fill_lock:
            self._flush_demand()
            wanted = self.targets()
            self.retire_stale(wanted)
            listing = self._listing()
            self._drop_warm(keep={name for name, _ in listing})
            added = 0
            for shape, count in wanted.items():
                missing = count - sum(1 for _, s in listing if s == shape)
                for _ in range(max(missing, 0)):
                    self._add_one(shape)
                    added += 1
            return added

    def _add_one(self, shape: Shape | None = None) -> None:
        shape = shape or self.template_shape
        image = self._image_of(shape)
        spec = dataclasses.replace(self.template, image=image, disk_mb=shape.disk_mb)
        volume_id = volumes.new_volume_id()
        with budget.reserving():
            budget.check(shape.disk_mb, limits=self.budget_limits)  # unclaimed: no org yet
            volumes.allocate(volume_id, shape.disk_mb)
        volumes.format_volume(volume_id)  # outside the lock (volumes.allocate)
        name = containers.POOL_PREFIX + volume_id
        labels = {POOL_LABEL: "1", IMAGE_LABEL: image, DISK_LABEL: str(shape.disk_mb)}
        channel.prepare(self.api)
        kwargs = containers.create_kwargs(spec, image, name, volume_id, self.extra_labels | labels)
        container = self.client.containers.create(**kwargs)
        channel.after_create(self.api, container.id, spec.network)
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
            self._warm[container.id] = (name, conn, shape)
            self._pids[container.id] = pid

    def _drop_warm(self, keep: set[str] | None = None) -> None:
        """Close the idle connections of containers no longer available (claimed elsewhere, removed)."""
        with self._warm_lock:
            gone = [
                cid
                for cid, (name, conn, _shape) in self._warm.items()
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
        """Remove every unclaimed pooled container (of any shape) and its volume."""
        self._drop_warm()
        for name, _shape in self._listing(running=False):
            self._remove_unclaimed(name)

    def _remove_unclaimed(self, name: str) -> None:
        volume_id = name[len(containers.POOL_PREFIX) :]
        if claim_marker_take(volume_id):  # a claimer that got there first keeps it
            self._remove_taken(name, volume_id)

    def _remove_taken(self, name_or_id: str, volume_id: str) -> None:
        try:
            container_id = self.api.inspect_container(name_or_id)["Id"]
            self.api.remove_container(container_id, force=True)
            volumes.lock_path(container_id).unlink(missing_ok=True)
        except docker.errors.NotFound:
            pass
        volumes.destroy_volume(volume_id)

    # --- claiming ---------------------------------------------------------------------------

    def fits(self, spec: SandboxSpec) -> bool:
        """The pool may hold a container for `spec`: any image, quota and limits, but no network at all
        (never hand one to an allowlist spec)."""
        return spec.network == "none"

    def _candidates(self, shape: Shape) -> Iterator[tuple[str, str, AgentConnection | None]]:
        """(id, name, warm connection or None) of `shape`: this pool's own first, then any other, oldest
        first."""
        tried = set()
        while True:
            with self._warm_lock:
                mine = next((cid for cid, entry in self._warm.items() if entry[2] == shape), None)
                if mine is None:
                    break
                name, conn, _shape = self._warm.pop(mine)
            if conn.dead:  # stopped, removed, or the daemon restarted: the listing decides
                conn.close()
                continue
            tried.add(mine)
            yield mine, name, conn
        found = self.api.containers(filters={"label": self._label_filter(shape), "status": "running"})
        for c in sorted(found, key=lambda c: c["Created"]):
            name = c["Names"][0].lstrip("/")
            if c["Id"] in tried or not name.startswith(containers.POOL_PREFIX):
                continue
            with self._warm_lock:  # made by this pool while we were claiming
                warm = self._warm.pop(c["Id"], None)
            yield c["Id"], name, warm[1] if warm else None

    def _give_back(self, container_id: str, name: str, conn: AgentConnection | None, shape: Shape) -> None:
        if conn is not None:
            conn.release_lock()
            with self._warm_lock:
                self._warm[container_id] = (name, conn, shape)
                self._warm.move_to_end(container_id, last=False)

    def claim(self, manager: DockerSandboxes, spec: SandboxSpec) -> DockerSandbox | None:
        """Bind a pooled container to `spec.session_id`, or None (no fit, none left, or the session
        got a sandbox meanwhile: the caller then reconnects to it). Every claim is demand for its shape."""
        if not self.fits(spec):
            return None
        shape = self.shape_of(spec)
        with self._warm_lock:
            self._asked.append((shape, time.time()))
        name = containers.session_container_name(spec.session_id)
        key = volumes.session_key(spec.session_id)
        for container_id, pooled, conn in self._candidates(shape):
            volume_id = pooled[len(containers.POOL_PREFIX) :]
            if not claim_marker_take(volume_id):
                if conn is not None:
                    conn.close()  # claimed (or being drained) by another process
                continue
            if limits_differ(spec, self.template) and not size_to(self.api, container_id, spec):
                if conn is not None:
                    conn.close()
                self._remove_taken(container_id, volume_id)
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
                if exc.status_code == 409 and sized_back(self.api, container_id, spec, self.template):
                    os.unlink(volumes.claim_marker(volume_id))  # still pooled: leave it claimable
                    self._give_back(container_id, pooled, conn, shape)
                    return None  # the session already has a container
                if conn is not None:
                    conn.close()
                self._remove_taken(container_id, volume_id)
                if exc.status_code == 409:
                    return None
                raise
            claim_register(key, spec, volume_id)
            self._wake.set()
            with self._warm_lock:
                pid = self._pids.pop(container_id, 0)
            registry.note_container(
                key, container_id, pid
            )  # another process's first contact needs no inspect
            return manager._attach(spec, name, container_id, conn)
        self._wake.set()
        return None
