"""The session's sandbox, from the sandbox library's Docker driver: get-or-create by session id with
the project's limits and only the project's sandbox-safe env vars (secrets never enter a sandbox).

A worker with Docker does it itself (`docker_sandbox`); an engine worker without Docker
(HANGAR_SANDBOX_REMOTE=1) asks the session's sandbox host to, over its Celery queue, and talks to the agent
over the TCP channel (hangar.engine.workspace.remote). `sandbox_factory` is the seam for tests that run the
loop without Docker."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from django.conf import settings

from hangar.engine.session.dbconn import release_connection
from hangar.engine.workspace.specs import spec_for
from hangar.logging import get_logger
from sandbox.protocol import Sandbox, SandboxSpec

if TYPE_CHECKING:
    from hangar.conversations.models import Session
    from sandbox.docker_backend import DockerSandbox
    from sandbox.manager import DockerSandboxes

log = get_logger(__name__)
SetupPhase = Callable[[], AbstractContextManager[None]]  # what the setup script runs inside

_manager: DockerSandboxes | None = None
_lock = threading.Lock()
_pool_allowed = False  # set in workers only (allow_warm_pool): a web process never keeps a warm pool


def allow_warm_pool() -> None:
    """Called when a Celery worker starts: its manager keeps the warm pool. A web process (where any
    signed-in request could otherwise have started one) never does."""
    global _pool_allowed
    _pool_allowed = True


def _pool_template() -> SandboxSpec:
    """The pool's template: the project defaults. Other limits are set at claim; other images and quotas
    are pooled once sessions ask for them (sandbox/pool_demand.py)."""
    from hangar.projects.models import Project

    default = {f.name: f.default for f in Project._meta.fields}
    return SandboxSpec(
        session_id="pool",
        image=None,
        cpus=default["sandbox_cpus"],
        memory_mb=default["sandbox_memory_mb"],
        pids=default["sandbox_pids"],
        disk_mb=default["sandbox_disk_mb"],
        network=default["network_policy"],
    )


def manager() -> DockerSandboxes:
    """The process's DockerSandboxes. In a worker with a warm pool (settings.SANDBOX_POOL_SIZE > 0, unless
    HANGAR_SANDBOX_POOL=0) a new session claims a started container instead of creating one in its
    first step (bench/sandbox.py prints both); elsewhere (a web process) there is no pool."""

    global _manager
    if _manager is None:
        with _lock:
            if _manager is None:
                from sandbox import DockerSandboxes, WarmPool

                on = _pool_allowed and os.environ.get("HANGAR_SANDBOX_POOL", "1") != "0"
                size = settings.SANDBOX_POOL_SIZE if on else 0
                pool = WarmPool(size, template=_pool_template()) if size > 0 else None
                _manager = DockerSandboxes(pool=pool)
                if pool is not None:
                    pool.start()
    return _manager


def docker_sandbox(session: Session, sandboxes: DockerSandboxes | None = None) -> DockerSandbox:
    """The session's sandbox made ready by this process, which holds the host's Docker socket: a worker on
    one host, or a host service acquiring it for a worker without Docker (engine/workspace/host_tasks.py)."""
    from hangar.engine.workspace.hosts import (
        place_here,
        record_placed,
        report_now,
        unbind_if_empty,
        written_elsewhere,
    )
    from hangar.engine.workspace.prepare import mirror_prefetch, workspace_ensure
    from hangar.engine.workspace.sandbox_share import make_room

    sandboxes = sandboxes or manager()
    # A new session only on a host that may take it (hangar.engine.workspace.placement), bound to it
    # before anything is made here: another host taking it at the same moment makes nothing.
    bound_now = place_here(session, sandboxes)
    try:
        prefetch = mirror_prefetch(session)  # the mirror's fetch overlaps the sandbox's creation or claim
        becomes_live = make_room(session, sandboxes)  # the org's cap on live sandboxes, over every host
        spec = spec_for(session)
        # The org's (and its owners') disk budgets count what they wrote on the other hosts too.
        spec.disk_elsewhere_mb = written_elsewhere(
            {spec.org_id, *(o for group in spec.disk_groups for o in group)}
        )
        # Creating or claiming a container takes seconds under a burst of sessions: the pooled DB
        # connection the reads above took (caps, owners, env) is not held idle meanwhile.
        release_connection()
        box = sandboxes.get_or_create(spec)
    except BaseException:
        if bound_now:
            unbind_if_empty(session)
        raise
    record_placed(session)  # Session.sandbox_host: where its workspace lives now
    if becomes_live:  # other hosts' caps count it now, not at the next heartbeat (sandbox_share)
        report_now(sandboxes)
    _bring_to(box, spec)  # a policy changed since the container was made (or last brought up to date)
    # The repository and setup script, once, before the first tool call.
    workspace_ensure(session, box, prefetch, setup_phase=_setup_phase(box, spec, session))
    return box


def _setup_phase(box: DockerSandbox, spec: SandboxSpec, session: Session) -> SetupPhase | None:
    """The project's setup-only hosts (`setup_network_allowlist`): open while the setup script runs (the
    sandbox brought to an allowlist network of them, plus the project's own allowlist under that policy),
    and the project's spec again after it, whatever the script did. None when there are none."""
    hosts = list(session.project.setup_network_allowlist or [])
    if not hosts:
        return None
    own = list(spec.allowlist) if spec.network == "allowlist" else []
    opened = dataclasses.replace(
        spec, network="allowlist", allowlist=own + [h for h in hosts if h not in own]
    )

    @contextmanager
    def phase() -> Iterator[None]:
        _bring_to(box, opened)
        try:
            yield
        finally:
            _bring_to(box, spec)

    return phase


def _bring_to(box: DockerSandbox, spec: SandboxSpec) -> None:
    from sandbox import live_spec
    from sandbox.manager import DockerSandboxes

    owner = box.manager
    if not isinstance(owner, DockerSandboxes):  # made by a manager of another kind: no spec to change
        return
    done = live_spec.apply(owner, box, spec)
    if done:
        log.info("sandbox_policy_applied", session=spec.session_id, done=done)


def sandbox_refresh(session: Session, box: Sandbox) -> None:
    """The session's policy changed mid-run (hangar.engine.turn.live_policy): bring its live sandbox to the new
    spec before the next tool call: here, or by its host when this worker has no Docker (remote.py). A
    sandbox of another kind (a test's local one) has no spec to change."""
    from hangar.engine.workspace.remote import RemoteReopener, remote_refresh
    from sandbox.docker_backend import DockerSandbox

    if isinstance(box, DockerSandbox) and isinstance(box.manager, RemoteReopener):
        remote_refresh(session, box)
    elif isinstance(box, DockerSandbox):
        _bring_to(box, spec_for(session))


def _remote_sandbox(session: Session) -> Sandbox:
    from hangar.engine.workspace.remote import remote_sandbox

    return remote_sandbox(session)


_docker_sandbox: Callable[[Session], Sandbox] = docker_sandbox
sandbox_factory: Callable[[Session], Sandbox] = (
    _remote_sandbox if settings.HANGAR_SANDBOX_REMOTE else _docker_sandbox
)


def egress_refused(box: Sandbox, since: float) -> list[str]:
    """The destinations the sandbox's egress proxy refused since `since` (unix seconds); [] for a
    sandbox that has none (network "none", or not a Docker sandbox)."""
    from hangar.engine.workspace.remote import RemoteReopener, remote_egress_refused
    from sandbox.docker_backend import DockerSandbox
    from sandbox.manager import DockerSandboxes

    if isinstance(box, DockerSandbox) and isinstance(box.manager, RemoteReopener):
        return remote_egress_refused(box.session_id, since)  # its proxy is on its host: asked there
    if not isinstance(box, DockerSandbox) or not isinstance(box.manager, DockerSandboxes):
        return []
    return manager().egress_denials(box.session_id, since)


def sandbox_for(session: Session) -> Sandbox:
    return sandbox_factory(session)


_plain_manager: DockerSandboxes | None = None


def _plain() -> DockerSandboxes:
    global _plain_manager
    with _lock:
        if _plain_manager is None:
            from sandbox import DockerSandboxes

            _plain_manager = DockerSandboxes(pool=None)
    return _plain_manager


def manager_without_pool() -> DockerSandboxes:
    """This host's sandboxes for work beside the runs (the host service's heartbeat and drain): getting it
    never starts the process's warm pool, which a worker would otherwise start as soon as it is ready."""
    return _plain()


def sandbox_without_pool(spec: SandboxSpec) -> DockerSandbox:
    """The session's sandbox for a process that must not keep a warm pool of its own (the web process,
    for a terminal): reconnects to the session's container, or creates it cold. Blocking (Docker)."""
    return _plain().get_or_create(spec)


def sandbox_for_request(session: Session) -> Sandbox:
    """`sandbox_for` for work a web request does itself (revert, fork): the same sandbox, prepared the same
    way and within the org's cap, but never a warm pool started in the web process."""
    if sandbox_factory is _docker_sandbox:
        return docker_sandbox(session, _plain())
    return sandbox_factory(session)


def hibernate_all() -> tuple[int, int]:
    """What deploy/up.sh does when it stops: every running sandbox of this host's sandbox root (its
    registry, HANGAR_SANDBOX_ROOT) hibernated, its workspace kept for the session's next run, and the
    warm pool's unclaimed containers removed. (hibernated, pooled removed)."""
    from sandbox import WarmPool, containers, registry

    sandboxes = _plain()
    mine = set(registry.registered_keys())
    running = sandboxes.api.containers(filters={"name": containers.SESSION_PREFIX, "status": "running"})
    hibernated = 0
    for found in running:
        key = found["Names"][0].lstrip("/")[len(containers.SESSION_PREFIX) :]
        record = registry.lookup(key) if key in mine else None
        if record:
            sandboxes.hibernate(record["session_id"])
            hibernated += 1
    removed = 0
    if settings.SANDBOX_POOL_SIZE > 0 and os.environ.get("HANGAR_SANDBOX_POOL", "1") != "0":
        pool = WarmPool(settings.SANDBOX_POOL_SIZE, template=_pool_template())
        removed = len(pool.available())
        pool.drain()
    return hibernated, removed
