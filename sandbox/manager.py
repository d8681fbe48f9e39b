"""DockerSandboxes: create, find, hibernate, resume and destroy session sandboxes.

A session's sandbox is the container named `hangar-s-<key>` (see containers.py); its workspace
lives on a quota volume recorded in the host registry (volumes.py). Any process on the host can
`connect(session_id)`: the name and the registry are the shared truth, not process memory.
Creation races are settled by Docker's unique container names and the registry's atomic create.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Protocol

import docker
import docker.errors

from sandbox import budget, channel, containers, egress, gitops, registry, volumes
from sandbox.channel_client import TcpAgentConnection, open_session_connection
from sandbox.connection import AgentConnection
from sandbox.docker_backend import DockerSandbox
from sandbox.image import ensure_image
from sandbox.protocol import SandboxError, SandboxSpec, SandboxUnavailable

STOP_TIMEOUT_S = 2


class Pool(Protocol):
    """What the manager asks of a warm pool (sandbox.pool.WarmPool, which builds on the manager): whether
    it holds a box for a spec, and the box claimed for a session."""

    def fits(self, spec: SandboxSpec) -> bool: ...

    def claim(self, manager: DockerSandboxes, spec: SandboxSpec) -> DockerSandbox | None: ...

    def drain(self) -> None: ...


def local_api(client: docker.DockerClient) -> docker.APIClient:
    """The client's low-level API. Over the local unix socket there is no proxy to honour, so requests
    need not scan the environment for one on every call (what trust_env does, on every Docker call)."""

    if client.api.base_url.startswith("http+docker://localhost"):
        client.api.trust_env = False
    return client.api


class DockerSandboxes:
    def __init__(
        self,
        client: docker.DockerClient | None = None,
        *,
        image: str | None = None,
        extra_labels: dict[str, str] | None = None,
        pool: Pool | None = None,
        egress_extra_hosts: dict[str, str] | None = None,
        egress_allow_private: list[str] | None = None,
        budget_limits: budget.Limits | None = None,
    ) -> None:
        self.client = client or docker.from_env()
        self.api = local_api(self.client)
        self.image = image or ensure_image(self.client)
        self.extra_labels = dict(extra_labels or {})
        self.pool = pool  # a WarmPool, or None for the cold path only
        self.egress_extra_hosts = dict(egress_extra_hosts or {})  # the proxy's /etc/hosts additions
        # Private ranges the operator opened to allowlists (default: HANGAR_EGRESS_ALLOW_PRIVATE).
        self.egress_operator = (
            egress.operator_ranges() if egress_allow_private is None else list(egress_allow_private)
        )
        self.budget_limits = budget_limits  # None: from the environment (budget.Limits.from_env)
        self._open: dict[str, DockerSandbox] = {}
        self._lock = threading.Lock()

    # --- public API -------------------------------------------------------------------------

    def get_or_create(self, spec: SandboxSpec) -> DockerSandbox:
        """The session's sandbox: reconnected if it exists (resumed if hibernated), claimed from
        the warm pool if one fits, else created cold."""
        with self._lock:
            cached = self._open.get(spec.session_id)
        if cached is not None and cached._conn is not None and not cached._conn.dead:
            return cached
        for _ in range(3):
            box = None
            if self.pool is not None and registry.lookup(volumes.session_key(spec.session_id)) is None:
                # A new session: claim first, without looking for its container (one inspect fewer).
                # Safe: renaming a pooled container onto the session's name fails if the session has a
                # container after all (another process binding it); we then connect to that one.
                # The pooled volume is reserved already; claiming it spends the org's budget.
                if spec.org_id and self.pool.fits(spec):
                    with budget.reserving():
                        budget.check_org(
                            spec.disk_mb,
                            spec.org_id,
                            self.budget_limits,
                            spec.disk_groups,
                            elsewhere=spec.disk_elsewhere_mb,
                        )
                box = self.pool.claim(self, spec)
            if box is None:
                box = self._connect_existing(spec.session_id, spec)
            if box is None:
                box = self._create_cold(spec)
            if box is not None:
                return self._remember(box)
        raise SandboxUnavailable(f"could not create a sandbox for session {spec.session_id}")

    def is_open(self, session_id: str) -> bool:
        """This process holds a live connection to the session's sandbox (so its container runs)."""
        with self._lock:
            box = self._open.get(session_id)
        return box is not None and box._conn is not None and not box._conn.dead

    def connect(self, session_id: str) -> DockerSandbox:
        """Reconnect to an existing session sandbox from any process. Raises SandboxError if the
        session has no sandbox at all."""
        box = self._connect_existing(session_id, None)
        if box is None:
            raise SandboxError(f"no sandbox for session {session_id}")
        return self._remember(box)

    def hibernate(self, session_id: str) -> None:
        """Stop and remove the container (and its egress proxy and networks), compact the workspace volume
        and unmount it; its image (and snapshots) and registry record stay, and resume makes the container
        again on them. A container holds nothing of its own (read-only root, tmpfs /tmp and home), so a
        hibernated session costs its compacted image and record, not a stopped container in Docker's every
        listing and the reaper's every sweep (bench/hibernated.py)."""
        self._forget(session_id)
        key = volumes.session_key(session_id)
        self._unpause(session_id)
        self._remove_container(session_id, stop_first=True)  # the agent's processes end on SIGTERM first
        egress.remove(self.api, key)  # ensured again (made) on resume, like the container
        record = registry.lookup(key)
        if record and record.get("volume"):
            volumes.compact(record["volume"])
            volumes.unmount(record["volume"])

    def _unpause(self, session_id: str) -> None:
        """A sandbox paused at the disk's watermark (sandbox.watermark) is let go before it is stopped."""
        key = volumes.session_key(session_id)
        if registry.paused_reason(key) is None:
            return
        try:
            self.api.unpause(containers.session_container_name(session_id))
        except docker.errors.APIError:
            pass  # not paused (any more), or gone
        registry.clear_paused(key)

    def resume(self, session_id: str) -> DockerSandbox:
        return self.connect(session_id)

    def egress_denials(self, session_id: str, since: float) -> list[str]:
        """What the session's egress proxy refused since `since` (egress.denials)."""
        return egress.denials(self.api, volumes.session_key(session_id), since)

    def destroy(self, session_id: str) -> None:
        """Remove the container, its egress proxy and network, the volume and the registry entry.
        Idempotent."""
        self._forget(session_id)
        self._unpause(session_id)
        key = volumes.session_key(session_id)
        record = registry.lookup(key)
        labels = self._remove_container(session_id, stop_first=False)
        volume_id = (record.get("volume") if record else None) or labels.get("hangar.volume")
        egress.remove(self.api, key)  # after the container: the network must have no endpoints
        if volume_id:
            volumes.destroy_volume(volume_id)
        gitops.remove_session(session_id)
        registry.unregister(key)

    def _remove_container(self, session_id: str, *, stop_first: bool) -> dict[str, str]:
        """Remove the session's container if there is one (and its attach lock); its labels, or {}."""
        name = containers.session_container_name(session_id)
        try:
            if stop_first:
                self.api.stop(name, timeout=STOP_TIMEOUT_S)
            info = self.api.inspect_container(name)
            self.api.remove_container(name, force=True)
            volumes.lock_path(info["Id"]).unlink(missing_ok=True)
            return dict(info["Config"]["Labels"] or {})
        except docker.errors.NotFound:
            return {}
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise
            return {}

    def is_running(self, session_id: str) -> bool:
        try:
            info = self.api.inspect_container(containers.session_container_name(session_id))
            running: bool = info["State"]["Running"]
            return running
        except docker.errors.NotFound:
            return False

    # --- internals --------------------------------------------------------------------------

    def _remember(self, box: DockerSandbox) -> DockerSandbox:
        with self._lock:
            self._open[box.session_id] = box
        return box

    def _forget(self, session_id: str) -> None:
        with self._lock:
            box = self._open.pop(session_id, None)
        if box:
            box.close()

    def _spec_from_record(self, session_id: str, record: dict[str, Any]) -> SandboxSpec:
        fields = {f.name for f in dataclasses.fields(SandboxSpec)}
        return SandboxSpec(
            **{k: v for k, v in (record.get("spec") or {}).items() if k in fields}
            | {"session_id": session_id}
        )

    def _connect_existing(self, session_id: str, spec: SandboxSpec | None) -> DockerSandbox | None:
        key = volumes.session_key(session_id)
        record = registry.lookup(key)
        name = containers.session_container_name(session_id)
        hint = registry.container_hint(key) if record is not None else None
        if record is not None and hint is not None and registry.process_start(hint[1], hint[0]) == hint[2]:
            box = self._attach_running(record, spec, session_id, name, hint[0])
            if box is not None:
                return box
        try:
            info = self.api.inspect_container(name)
        except docker.errors.NotFound:
            info = None
        if info is None and record is None:
            return None
        if record is None:  # a container without a record: still being bound by another process
            deadline = time.monotonic() + 5
            while record is None and time.monotonic() < deadline:
                time.sleep(0.02)
                record = registry.lookup(key)
            if record is None:
                raise SandboxUnavailable(f"sandbox {name} exists but is not registered")
        spec = self._spec_from_record(session_id, record) if spec is None else spec
        volumes.ensure_mounted(record["volume"])
        if spec.network == "allowlist":
            self._ensure_egress(spec)  # before (re)starting: the proxy must be there to reach
        if info is None:
            # The container is gone (crash, host cleanup) but the workspace is not: recreate it.
            if not self._create_container(spec, name, record["volume"], self._labels(spec, key)):
                return None
            info = self.api.inspect_container(name)
        elif not info["State"]["Running"]:
            self.api.start(name)
        elif hint is None or hint[0] != info["Id"] or hint[1] != info["State"]["Pid"]:
            registry.note_container(key, info["Id"], info["State"]["Pid"])  # for the next first contact
        return self._attach(spec, name, info["Id"])

    def _attach_running(
        self, record: dict[str, Any], spec: SandboxSpec | None, session_id: str, name: str, container_id: str
    ) -> DockerSandbox | None:
        """Attach by the id the registry remembers, without an inspect. The caller saw the container's
        init alive in /proc (dockerd would accept an attach to a stopped container, then send nothing);
        the container is this session's (ids are never reused, and a container bound to a session is
        never bound to another). None if the attach fails: the caller inspects, starts or recreates."""
        spec = self._spec_from_record(session_id, record) if spec is None else spec
        if spec.network == "allowlist":
            return None  # the full path also makes sure the session's egress proxy is up
        try:
            if channel.enabled():
                conn: AgentConnection = open_session_connection(session_id)
            else:
                conn = AgentConnection.open(self.api, container_id, str(volumes.lock_path(container_id)))
        except (docker.errors.APIError, SandboxUnavailable):
            return None
        return self._attach(spec, name, container_id, conn)

    def _ensure_egress(self, spec: SandboxSpec) -> None:
        egress.ensure(
            self.client,
            key=volumes.session_key(spec.session_id),
            image=self.image,
            allowlist=spec.allowlist,
            labels=self.extra_labels | {containers.MANAGED: "1"},
            extra_hosts=self.egress_extra_hosts,
            operator=self.egress_operator,
        )

    def _create_container(
        self, spec: SandboxSpec, name: str, volume_id: str, labels: dict[str, str]
    ) -> str | None:
        """Create and start; returns the id, or None if another process took the name first."""
        channel.prepare(self.api)
        kwargs = containers.create_kwargs(
            spec, spec.image or self.image, name, volume_id, self.extra_labels | labels
        )
        try:
            container = self.client.containers.create(**kwargs)
        except docker.errors.APIError as exc:
            if exc.status_code == 409:
                return None
            raise
        channel.after_create(self.api, container.id, spec.network)
        container.start()
        container_id: str = container.id
        return container_id

    def _create_cold(self, spec: SandboxSpec) -> DockerSandbox | None:
        key = volumes.session_key(spec.session_id)
        name = containers.session_container_name(spec.session_id)
        if spec.network == "allowlist":
            # A bad entry fails before anything exists.
            egress.validate_allowlist(spec.allowlist, self.egress_operator, egress.host_addresses(self.api))
        volume_id = volumes.new_volume_id()
        with budget.reserving():  # checked and reserved (the image file) under one host-wide lock
            budget.check(
                spec.disk_mb,
                org_id=spec.org_id,
                limits=self.budget_limits,
                groups=spec.disk_groups,
                elsewhere=spec.disk_elsewhere_mb,
            )
            volumes.allocate(volume_id, spec.disk_mb)
        volumes.format_volume(volume_id)  # mkfs outside the lock: sandboxes starting together, at once
        if not registry.register(key, self._record(spec, volume_id)):
            volumes.destroy_volume(volume_id)  # lost the race: the winner's sandbox will appear
            return None
        if spec.network == "allowlist":
            self._ensure_egress(spec)
        container_id = self._create_container(spec, name, volume_id, self._labels(spec, key))
        if container_id is None:
            return None
        # For the next first contact (this session's next run, any process): attach without an inspect.
        # One inspect here, where creating the container already took a few hundred milliseconds.
        pid = self.api.inspect_container(container_id)["State"]["Pid"]
        if pid:
            registry.note_container(key, container_id, pid)
        return self._attach(spec, name, container_id)

    def _attach(
        self, spec: SandboxSpec, name: str, container_id: str, conn: AgentConnection | None = None
    ) -> DockerSandbox:
        """Connect to the agent (or take over `conn`, the warm pool's) and (re)bind the session's env.
        Binding on every attach, not only at creation, means a bind that failed once (or an env a
        project admin changed) is put right by the next connection instead of leaving the session
        without its env for good. One round trip."""
        if channel.enabled() and (conn is None or conn.mode != "tcp"):
            # Where its agent listens now (an address can change with a restart), for every worker, and
            # this process talks to it the same way: a warm pool's attach connection is let go (its
            # attach lock with it). A connection made from the registry's endpoint (_attach_running)
            # needs no inspect.
            endpoint = self._note_channel(spec.session_id, container_id)
            if endpoint is not None:
                if conn is not None:
                    conn.close()
                conn = TcpAgentConnection.connect(*endpoint, wait_s=10)
        if conn is None:
            conn = AgentConnection.open(self.api, container_id, str(volumes.lock_path(container_id)))
        box = DockerSandbox(self, spec, name, conn)
        if spec.env:
            box._call("bind", {"env": spec.env})
        return box

    def _note_channel(self, session_id: str, container_id: str) -> tuple[str, int, bytes] | None:
        """Record the agent's TCP endpoint for the session (registry.note_channel); its address, port
        and secret. None for a container made before the channel was on (no secret, not on its network):
        this process attaches to it as before, and it gets the channel when it is next recreated."""
        info = self.api.inspect_container(container_id)
        endpoint = channel.endpoint_of(info)
        volume_id = info["Config"]["Labels"].get("hangar.volume", "")
        secret = channel.read_secret(volume_id)
        if endpoint is None or secret is None:
            return None
        registry.note_channel(volumes.session_key(session_id), *endpoint, volume_id)
        return (*endpoint, secret)

    @staticmethod
    def _labels(spec: SandboxSpec, key: str) -> dict[str, str]:
        """A session container's labels, when it is made and when resume makes it again."""
        labels = {"hangar.session": spec.session_id[:200], "hangar.org": spec.org_id}
        return labels | {"hangar.project": spec.project_id, "hangar.session_key": key}

    @staticmethod
    def _record(spec: SandboxSpec, volume_id: str) -> dict[str, Any]:
        return {
            "session_id": spec.session_id,
            "volume": volume_id,
            "org_id": spec.org_id,
            "project_id": spec.project_id,
            "spec": dataclasses.asdict(spec),
        }

    def reopen(self, box: DockerSandbox) -> AgentConnection:
        """Called by a sandbox whose connection died: resume or recreate, then reconnect."""
        try:
            fresh = self._connect_existing(box.session_id, box.spec)
        except (docker.errors.DockerException, OSError, RuntimeError) as exc:
            raise SandboxUnavailable(f"cannot bring back sandbox for {box.session_id}: {exc}") from exc
        if fresh is None:
            raise SandboxUnavailable(f"sandbox for {box.session_id} was destroyed")
        if fresh._conn is None:
            raise SandboxUnavailable(f"sandbox for {box.session_id} has no connection")
        return fresh._conn
