"""What a test process's sandbox root still holds when the suite ends, removed: the containers, volumes and
loop mounts that tests, the workers they started and those workers' warm pools left behind (a killed
worker never drains its pool; many tests end with their session's sandbox live). Left running, a dozen
of them outlived every run, and each idle container's shim costs the machine CPU (bench/runtime_idle.py)
that the next bench run on it counted.

Only in a parallel run's test processes: each has a sandbox root of its own (tests/envdefaults.py), so
nothing here can belong to anything else. A single-process run's root may be a developer's platform's
(the default /var/lib/hangar) and is left alone."""

from __future__ import annotations

import os

import docker
import docker.errors

from sandbox import containers, registry, volumes
from sandbox.manager import DockerSandboxes


def remove_all() -> int:
    """Remove every sandbox of this process's root; how many containers went."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return 0
    try:
        api = docker.APIClient(timeout=30)
        api.ping()
    except Exception:  # a run without Docker (the fast tier) made none
        return 0
    sandboxes = DockerSandboxes()
    removed = 0
    for key in registry.registered_keys():
        session_id = (registry.lookup(key) or {}).get("session_id") or key
        removed += _exists(api, containers.session_container_name(session_id))
        sandboxes.destroy(session_id)  # container, egress proxy, volume, host git, record
    for found in api.containers(all=True, filters={"label": f"hangar.root={volumes.root_tag()}"}):
        removed += _remove(api, found["Id"])
        if volume := found["Labels"].get("hangar.volume"):
            volumes.destroy_volume(volume)
    return removed


def _exists(api: docker.APIClient, name: str) -> int:
    try:
        api.inspect_container(name)
        return 1
    except docker.errors.NotFound:
        return 0


def _remove(api: docker.APIClient, name_or_id: str) -> int:
    try:
        api.remove_container(name_or_id, force=True)
        return 1
    except docker.errors.NotFound:
        return 0
