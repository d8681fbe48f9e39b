"""The host service's Celery tasks: what only the machine holding a sandbox's Docker engine and sandbox root
can do, sent by engine workers that hold neither (hangar.engine.workspace.remote) to that host's queue,
`host.<name>` (name: HANGAR_SANDBOX_HOST). A host service is a worker consuming it:

    celery -A hangar worker --pool threads -Q host.$HANGAR_SANDBOX_HOST   (deploy/run-host.sh)

with the Docker socket, the sandbox root and HANGAR_AGENT_TRANSPORT=tcp. It registers and heart-beats for
its host as every worker with Docker does (hangar.engine.workspace.host_service).

- acquire: the session's sandbox made ready, as a worker with Docker makes it (placement's check on this
  host, the org's cap on live sandboxes, create / claim from the warm pool / resume, the live policy, the
  repository and setup script: hangar.engine.workspace.sandboxes.docker_sandbox); answers where the
  agent listens and its channel secret, sealed to the asking process (hangar.engine.workspace.sealing);
- locate: where a *running* sandbox's agent answers (and its sealed secret), starting nothing: the web
  process's reads (hangar.engine.workspace.web_sandbox);
- hibernate, destroy: as DockerSandboxes does them; hibernate idle: up to N of some orgs' idle sandboxes
  on this host, least recently used first, for an org's cap on another host (sandbox_share.make_room),
  the host's registry row brought up to date before it answers; egress denials: what the session's egress proxy
  refused since a time (audited after a run);
- reap, watermark, checkpoints: beat's periodic sweeps, sent to every host by an engine worker without
  Docker (checkpoints: the live workspaces changed since their last, copied to the archive).

A failure is an answer ({"error", "kind"}), not a raised exception: the engine re-raises it as the error
the turn shows, of the same kind it would have been on one host; a session another host bound first is
{"kind": "elsewhere", "host"}, and the engine asks that host instead.
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Iterator
from typing import Any

from celery import shared_task
from django.db import connection

from hangar.engine.workspace.host_names import (
    ACQUIRE,
    CHECKPOINT,
    DESTROY,
    EGRESS_DENIALS,
    HIBERNATE,
    HIBERNATE_IDLE,
    LOCATE,
    REAP,
    WATERMARK,
)
from hangar.logging import get_logger

log = get_logger(__name__)


def _failure(exc: BaseException) -> dict[str, Any]:
    from hangar.engine.workspace.host_service import host_name
    from hangar.engine.workspace.placement import BoundElsewhere
    from hangar.engine.workspace.prepare import WorkspaceError
    from sandbox.protocol import SandboxError, SandboxUnavailable

    if isinstance(exc, BoundElsewhere):  # the asking worker goes there instead
        return {"error": str(exc), "kind": "elsewhere", "host": exc.host}
    if isinstance(exc, WorkspaceError):
        return {"error": str(exc), "kind": "workspace"}
    if isinstance(exc, SandboxUnavailable):
        return {"error": str(exc), "kind": "unavailable"}
    if isinstance(exc, SandboxError):
        return {"error": str(exc), "kind": "error"}
    log.exception("host_task_failed", host=host_name())
    return {"error": f"sandbox host {host_name()} failed: {type(exc).__name__}: {exc}", "kind": "unavailable"}


_locks = [threading.Lock() for _ in range(64)]  # striped by session: bounded, rarely shared


@contextlib.contextmanager
def _acquiring(session_id: str) -> Iterator[None]:
    """One acquisition of a session at a time in this host service."""
    with _locks[zlib.crc32(session_id.encode()) % len(_locks)]:
        yield


@shared_task(name=ACQUIRE, ignore_result=False)
def sandbox_acquire(session_id: str, reply_key: str) -> dict[str, Any]:
    """The session's sandbox, ready for its next tool call: {host, address, port, secret (sealed)}."""
    from hangar.conversations.loop_selectors import session_for_run
    from hangar.conversations.models import Session
    from hangar.engine.workspace.host_service import host_name
    from hangar.engine.workspace.sandboxes import docker_sandbox
    from hangar.engine.workspace.sealing import seal
    from sandbox import channel, registry, volumes

    try:
        if not channel.enabled():
            return {
                "error": f"sandbox host {host_name()} does not serve the agent channel"
                f" ({channel.SETTING}=tcp), so no worker without Docker can reach its sandboxes",
                "kind": "unavailable",
            }
        try:
            session = session_for_run(session_id)
        except Session.DoesNotExist:
            return {"error": f"session {session_id} does not exist", "kind": "error"}
        with _acquiring(session_id):  # two at once (a run's and a stale one's) would both import or create
            box = docker_sandbox(session)
        # One round trip on the host's own connection: a container the live policy just removed to
        # recreate on a new network or image (sandbox/live_spec.py) is made again now, and the registry
        # records where its agent answers before that is read below.
        box.ping()
        endpoint = registry.channel_endpoint(volumes.session_key(session_id))
        secret = channel.read_secret(endpoint[2]) if endpoint else None
        if endpoint is None or secret is None:
            return {
                "error": f"the sandbox of session {session_id} on host {host_name()} was made before the"
                " agent channel was on: it is reachable by attach only until it is recreated",
                "kind": "unavailable",
            }
        return {
            "host": host_name(),
            "address": endpoint[0],
            "port": endpoint[1],
            "secret": seal(secret, reply_key, session_id),
        }
    except Exception as exc:
        return _failure(exc)
    finally:
        connection.close()


@shared_task(name=LOCATE, ignore_result=False)
def sandbox_locate(session_id: str, reply_key: str) -> dict[str, Any]:
    """{"running": False}, or the running sandbox's {address, port, secret (sealed)}: one inspect, no
    attach, nothing started."""
    import docker.errors

    from hangar.engine.workspace.sandboxes import manager_without_pool
    from hangar.engine.workspace.sealing import seal
    from sandbox import channel, containers

    try:
        api = manager_without_pool().api
        try:
            info = api.inspect_container(containers.session_container_name(session_id))
        except docker.errors.NotFound:
            return {"running": False}
        endpoint = channel.endpoint_of(info)
        secret = channel.read_secret((info["Config"]["Labels"] or {}).get("hangar.volume", ""))
        if not info["State"]["Running"] or info["State"].get("Paused") or endpoint is None or secret is None:
            return {"running": False}
        return {
            "running": True,
            "address": endpoint[0],
            "port": endpoint[1],
            "secret": seal(secret, reply_key, session_id),
        }
    except Exception as exc:
        return _failure(exc)


@shared_task(name=HIBERNATE, ignore_result=False)
def sandbox_hibernate(session_id: str) -> dict[str, Any]:
    from hangar.engine.workspace.sandboxes import manager

    try:
        manager().hibernate(session_id)
        return {"ok": True}
    except Exception as exc:
        return _failure(exc)


@shared_task(name=HIBERNATE_IDLE, ignore_result=False)
def hibernate_idle(org_ids: list[str], count: int, keep: str) -> dict[str, Any]:
    """Hibernate up to `count` live sandboxes of `org_ids` here whose sessions are not running (never
    `keep`'s), least recently used first: {"hibernated": [session ids], "live": how many of theirs stay
    live here}. The host's heartbeat is sent before answering, so the registry counts them gone."""
    from hangar.engine.workspace.host_service import beat_once
    from hangar.engine.workspace.sandbox_share import hibernate_idle_here
    from hangar.engine.workspace.sandboxes import manager

    try:
        sandboxes = manager()
        done, live = hibernate_idle_here(sandboxes, set(org_ids), count, keep)
        if done:
            beat_once(sandboxes)
        return {"hibernated": done, "live": live}
    except Exception as exc:
        return _failure(exc)
    finally:
        connection.close()


@shared_task(name=DESTROY, ignore_result=False)
def sandbox_destroy(session_id: str) -> dict[str, Any]:
    from hangar.engine.workspace.sandboxes import manager
    from sandbox import workspace_archive

    try:
        manager().destroy(session_id)
        workspace_archive.forget_checkpoint(session_id)
        return {"ok": True}
    except Exception as exc:
        return _failure(exc)


@shared_task(name=EGRESS_DENIALS, ignore_result=False)
def egress_denials(session_id: str, since: float) -> dict[str, Any]:
    from hangar.engine.workspace.sandboxes import manager

    try:
        return {"refused": manager().egress_denials(session_id, since)}
    except Exception as exc:
        return _failure(exc)


@shared_task(name=REAP, ignore_result=True)
def reap_sandboxes() -> dict[str, Any]:
    from hangar.engine.workspace.reaping import reap

    try:
        return reap()
    finally:
        connection.close()


@shared_task(name=WATERMARK, ignore_result=True)
def sandbox_watermark() -> dict[str, Any]:
    from hangar.engine.workspace.reaping import watermark

    try:
        return watermark()
    finally:
        connection.close()  # the registry's read: no connection held idle between sweeps


@shared_task(name=CHECKPOINT, ignore_result=False)
def workspace_checkpoints() -> dict[str, Any]:
    from hangar.engine.workspace.reaping import checkpoints

    try:
        return checkpoints()
    finally:
        connection.close()
