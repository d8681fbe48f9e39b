"""An engine worker that holds no Docker socket (HANGAR_SANDBOX_REMOTE=1): its sessions' sandboxes live on
sandbox hosts, whose services do everything that needs Docker or the sandbox root (host_tasks.py), and the
worker reaches each sandbox's agent over the TCP channel (sandbox/channel_client.py).

Acquiring a session's sandbox (its run's first tool call, or a dropped connection) is one host task:
- the host: the one holding the session's workspace (`Session.sandbox_host`), else placement's choice
  among every registered host (hangar.engine.workspace.placement: active, the project's labels, room, the
  org spread over hosts); a session whose host is lost is released from it and placed anew, resuming
  from its last checkpoint (hangar.engine.workspace.host_resume). The chosen host binds a homeless session
  to itself before making anything (hangar.engine.workspace.hosts.place_here); when another worker's host
  bound it first, the answer names that host and this worker asks it instead;
- the task `hangar.host.sandbox_acquire` on `host.<name>`, awaited at most HANGAR_HOST_TASK_TIMEOUT_S
  (sent with that expiry, so a host that comes back later does not work for a caller long gone); a host
  that does not answer is a SandboxUnavailable naming it, and the host's own refusals come back as the
  same errors a worker with Docker would have raised;
- its answer: the agent's address and port, and the channel secret sealed to this process
  (hangar.engine.workspace.sealing), read once and deleted from the result backend.
The connection is then kept per session in this process, as DockerSandboxes keeps its own: the next run
of the session in this process pays no host task, and every request to the agent (exec, read, write,
grep, snapshots) is one round trip on it. When it drops (the host hibernated the sandbox, the agent
died), the next call acquires again through the host, which resumes or recreates the container.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from django.conf import settings

from hangar.conversations.fence import owner_for
from hangar.conversations.host_selectors import (
    host_named,
    hosts_all,
    session_host_lost,
    session_host_name,
    session_lease_is,
)
from hangar.conversations.models import HostState
from hangar.engine.session.dbconn import release_connection
from hangar.engine.workspace.host_names import (
    ACQUIRE,
    DESTROY,
    EGRESS_DENIALS,
    HIBERNATE,
    LOCATE,
    host_queue,
)
from hangar.engine.workspace.placement import BoundElsewhere, NoHost
from hangar.engine.workspace.sealing import opener
from hangar.engine.workspace.specs import spec_for
from hangar.logging import get_logger
from sandbox import containers
from sandbox.channel_client import TcpAgentConnection
from sandbox.connection import AgentConnection
from sandbox.docker_backend import DockerSandbox
from sandbox.protocol import SandboxError, SandboxSpec, SandboxUnavailable

if TYPE_CHECKING:
    from hangar.conversations.models import Session

log = get_logger(__name__)

_open: dict[str, DockerSandbox] = {}
_endpoints: dict[str, tuple[str, int]] = {}  # where each session's agent answered last
_located: dict[str, DockerSandbox] = {}  # running sandboxes the web process reads (never started here)
_lock = threading.Lock()
CONNECT_WAIT_S = 10.0  # a container just (re)started: its agent binds in ~0.1 s
EGRESS_TIMEOUT_S = 30.0  # one Docker log read on the host
LOCATE_TIMEOUT_S = 10.0  # one inspect on the host
BOUND_ELSEWHERE_TRIES = 3  # a host that answers "bound to another host" once is the usual race's loser


def remote_sandbox(session: Session) -> DockerSandbox:
    """The session's sandbox over the agent channel; a host task only when this process has no live
    connection to it."""
    with _lock:
        cached = _open.get(session.pk)
    if cached is not None and cached._conn is not None and not cached._conn.dead:
        if not session_host_lost(session.pk):
            return cached
        forget(session.pk)  # its host is lost (its container may outlive its engine): resume elsewhere
    spec = spec_for(session)  # the limits the calls are bounded by (the host bound the env already)
    box = DockerSandbox(_REOPENER, spec, containers.session_container_name(session.pk), _acquire(session))
    with _lock:
        _open[session.pk] = box
    return box


def _acquire(session: Session) -> AgentConnection:
    owner = owner_for(session.pk)  # the run asking, if any: one whose lease moved places nothing anew
    if owner is not None and not session_lease_is(session.pk, owner):
        raise SandboxUnavailable(f"this run no longer holds session {session.pk} (its lease moved)")
    for _ in range(BOUND_ELSEWHERE_TRIES):
        host = host_for(session)
        try:
            answer = call_host(host, ACQUIRE, [session.pk, opener().public_hex])
            break
        except BoundElsewhere as moved:  # another worker placed it first: its host, read again, is asked
            log.info("sandbox_bound_elsewhere", session=session.pk, asked=host, holder=moved.host)
    else:
        raise SandboxUnavailable(f"session {session.pk} kept moving between sandbox hosts; try again")
    secret = opener().open(answer["secret"], session.pk)
    endpoint = (str(answer["address"]), int(answer["port"]))
    conn = TcpAgentConnection.connect(*endpoint, secret, wait_s=CONNECT_WAIT_S)
    with _lock:
        _endpoints[session.pk] = endpoint
    log.info("sandbox_acquired_remote", session=session.pk, host=host)
    return conn


def remote_refresh(session: Session, box: DockerSandbox) -> None:
    """The session's policy changed mid-run (hangar.engine.turn.live_policy): its host brings the sandbox to
    it (an acquisition applies the spec in force: env re-bound, limits, proxy, or the container recreated
    on its workspace). A recreated container answers elsewhere: the box's connection moves to it now, so
    the next tool call pays no second host task."""
    with _lock:
        before = _endpoints.get(session.pk)
    conn = _acquire(session)
    box.spec = spec_for(session)
    with _lock:
        after = _endpoints.get(session.pk)
    if after == before and box._conn is not None and not box._conn.dead:
        conn.close()  # the same agent: the run's connection stays
        return
    with box._reconnect_lock:
        old, box._conn = box._conn, conn
    if old is not None:
        old.close()


def host_for(session: Session) -> str:
    """Where the session's sandbox is, or goes: its workspace's host, else placement's choice."""
    current = session_host_name(session.pk)  # read now: another process may have placed it since
    if current:
        host = host_named(current)
        if host is None or host.state != HostState.LOST:
            return current
    from hangar.engine.workspace.host_resume import leave_lost_host
    from hangar.engine.workspace.hosts import choose_host

    try:
        chosen = choose_host(session)
    except NoHost as exc:
        lost = f"sandbox host {current}, which holds this session's workspace, is lost; " if current else ""
        raise SandboxUnavailable(f"{lost}{exc}") from None
    if current and not leave_lost_host(session, current, chosen):
        return host_for(session)  # another process moved it meanwhile: where it is now
    return chosen


def call_host(host: str, task: str, args: list[Any], timeout: float | None = None) -> dict[str, Any]:
    """Send `task` to `host`'s queue and await its answer; SandboxUnavailable if the host does not answer
    in time, and a host's refusal as the error it would have been on one host."""
    from celery.exceptions import TimeoutError as CeleryTimeout

    from hangar.celery import app

    timeout = float(settings.HANGAR_HOST_TASK_TIMEOUT_S if timeout is None else timeout)
    release_connection()  # minutes of a cold start or a clone hold no pooled DB connection idle
    result = None
    try:
        result = app.send_task(task, args=args, queue=host_queue(host), expires=timeout, ignore_result=False)
        answer: dict[str, Any] = result.get(timeout=timeout, disable_sync_subtasks=False, propagate=True)
    except CeleryTimeout:
        raise SandboxUnavailable(
            f"sandbox host {host} did not answer within {timeout:g} s (is its host service running?)"
        ) from None
    except Exception as exc:  # the broker or result backend failing; a request revoked (expired) by a host
        raise SandboxUnavailable(
            f"sandbox host {host} could not be asked: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if result is not None:
            with contextlib.suppress(Exception):  # it expires in any case
                result.forget()
    if "error" in answer:
        raise _error_of(answer)
    return answer


def _error_of(answer: dict[str, Any]) -> SandboxError:
    from hangar.engine.workspace.prepare import WorkspaceError

    message = str(answer["error"])
    kind = answer.get("kind")
    if kind == "workspace":
        return WorkspaceError(message)
    if kind == "unavailable":
        return SandboxUnavailable(message)
    if kind == "elsewhere":
        return BoundElsewhere(message, str(answer.get("host") or ""))
    return SandboxError(message)


class RemoteReopener:
    """Reopens a dropped channel through the session's host (which resumes or recreates the sandbox)."""

    def reopen(self, box: DockerSandbox) -> AgentConnection:
        from hangar.conversations.loop_selectors import session_for_run
        from hangar.conversations.models import Session

        try:
            session = session_for_run(box.session_id)
        except Session.DoesNotExist:
            raise SandboxUnavailable(f"session {box.session_id} is gone") from None
        return _acquire(session)


_REOPENER = RemoteReopener()


def forget(session_id: str) -> None:
    """Drop this process's connection to the session's sandbox (the sandbox is untouched)."""
    with _lock:
        boxes = [_open.pop(session_id, None), _located.pop(session_id, None)]
        _endpoints.pop(session_id, None)
    for box in boxes:
        if box is not None:
            box.close()


def remote_hibernate(session_id: str) -> None:
    """Hibernate the session's sandbox on its host (the workspace stays; the next acquire resumes it)."""
    forget(session_id)
    host = session_host_name(session_id)
    if host:
        call_host(host, HIBERNATE, [session_id])


def remote_destroy(session_id: str) -> None:
    """Destroy the session's sandbox and workspace on its host."""
    forget(session_id)
    host = session_host_name(session_id)
    if host:
        call_host(host, DESTROY, [session_id])


def running_remote(session_id: str, timeout: float) -> DockerSandbox | None:
    """The session's sandbox if it runs on its host, else None; never starts one (the web process's reads,
    hangar.engine.workspace.web_sandbox). One host task the first time per process (or after the
    connection dropped); then the kept connection, one round trip per read, as on one host."""
    with _lock:
        cached = _located.get(session_id)
    if cached is not None and cached._conn is not None and not cached._conn.dead:
        return cached
    conn = _locate(session_id, timeout)
    if conn is None:
        return None
    box = DockerSandbox(
        _LOCATOR, SandboxSpec(session_id=session_id), containers.session_container_name(session_id), conn
    )
    with _lock:
        _located[session_id] = box
    return box


def _locate(session_id: str, timeout: float) -> TcpAgentConnection | None:
    host = session_host_name(session_id)
    if not host:
        return None
    answer = call_host(host, LOCATE, [session_id, opener().public_hex], timeout=timeout)
    if not answer.get("running"):
        return None
    secret = opener().open(answer["secret"], session_id)
    return TcpAgentConnection.connect(str(answer["address"]), int(answer["port"]), secret)


class RunningLocator:
    """Reopens a located sandbox's dropped channel only while it still runs (a web read starts nothing)."""

    def reopen(self, box: DockerSandbox) -> AgentConnection:
        conn = _locate(box.session_id, LOCATE_TIMEOUT_S)
        if conn is None:
            raise SandboxUnavailable(f"the sandbox of session {box.session_id} is not running")
        return conn


_LOCATOR = RunningLocator()


def remote_egress_refused(session_id: str, since: float) -> list[str]:
    """What the session's egress proxy on its host refused since `since` (unix seconds); [] when the host
    cannot say (this is read after a run, off its path: a failure is logged, never raised)."""
    host = session_host_name(session_id)
    if not host:
        return []
    try:
        answer = call_host(host, EGRESS_DENIALS, [session_id, since], timeout=EGRESS_TIMEOUT_S)
    except SandboxError:
        log.warning("egress_denials_unavailable", session=session_id, host=host, exc_info=True)
        return []
    return [str(target) for target in answer.get("refused") or []]


def send_to_hosts(task: str) -> list[str]:
    """Send a periodic sweep (reap, watermark) to every host that is not lost; the hosts it went to."""
    from hangar.celery import app

    sent = []
    for host in hosts_all():
        if host.state != HostState.LOST:
            app.send_task(task, queue=host_queue(host.name), ignore_result=True, expires=60)
            sent.append(host.name)
    return sent
