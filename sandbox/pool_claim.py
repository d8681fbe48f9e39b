"""The steps that bind a taken pooled container to a session (sandbox/pool.py's claim path): the atomic
claim marker, sizing the container to the claim's limits (and back to the template's when the claim does
not happen), and the host registry's record. Separate from the pool, which keeps the inventory (what is
warm, of which shape, refilled in the background): these steps hold no pool state, and each is what makes
one claim exclusive or undoes it.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import docker
import docker.errors

from sandbox import containers, registry, volumes
from sandbox.protocol import SandboxSpec

log = logging.getLogger(__name__)
# Set at claim time when a spec asks other values than the template's (`docker update`).
CLAIM_LIMITS = ("cpus", "memory_mb", "pids")


def claim_marker_take(volume_id: str) -> bool:
    """Atomically mark a pooled volume as claimed; False if someone else got it first."""
    try:
        os.close(os.open(volumes.claim_marker(volume_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        return False


def limits_differ(spec: SandboxSpec, template: SandboxSpec) -> bool:
    return any(getattr(spec, f) != getattr(template, f) for f in CLAIM_LIMITS)


def size_to(api: docker.APIClient, container_id: str, spec: SandboxSpec) -> bool:
    """Give a taken container `spec`'s memory, CPUs and pids; False if Docker refused (the caller
    removes it: it is no longer the template's, nor the spec's)."""
    try:
        containers.update_limits(api, container_id, spec)
    except docker.errors.APIError:
        log.warning("could not size pooled container %s for a claim", container_id, exc_info=True)
        return False
    return True


def sized_back(api: docker.APIClient, container_id: str, spec: SandboxSpec, template: SandboxSpec) -> bool:
    """Return a container sized for a claim that did not happen to the template's limits."""
    return not limits_differ(spec, template) or size_to(api, container_id, template)


def claim_register(key: str, spec: SandboxSpec, volume_id: str) -> None:
    """Record the session's binding to the pooled volume, which becomes its workspace."""
    record = {
        "session_id": spec.session_id,
        "volume": volume_id,
        "org_id": spec.org_id,
        "project_id": spec.project_id,
        "spec": dataclasses.asdict(spec),
        "pooled": True,
    }
    if not registry.register(key, record):
        # Registered by a racing cold create whose container lost the name to us: the
        # record names its volume; drop that orphan volume, keep ours.
        stale = registry.lookup(key) or {}
        registry.unregister(key)
        if stale.get("volume") and stale["volume"] != volume_id:
            volumes.destroy_volume(stale["volume"])
        registry.register(key, record)
