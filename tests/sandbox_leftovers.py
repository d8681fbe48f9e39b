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

from sandbox import registry
from sandbox.manager import DockerSandboxes
from sandbox.pool import WarmPool


def remove_all() -> None:
    """Destroy every session sandbox of this process's root and drain its warm pools' containers."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:  # a run without Docker (the fast tier) made none
        return
    sandboxes = DockerSandboxes(client)
    for key in registry.registered_keys():
        # container, egress proxy, volume, host git, record
        sandboxes.destroy((registry.lookup(key) or {}).get("session_id") or key)
    # Every unclaimed pooled container labelled with this root, any shape, with its volume.
    WarmPool(0, client=client, image=sandboxes.image).drain()
