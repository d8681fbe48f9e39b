"""Which session sandboxes are live (running) on this host, and whose: for per-org caps on live sandboxes.

A sandbox counts for the org its registry record names (volumes.py); a container of another sandbox root
has no record here and does not count. Warm-pool containers belong to nobody until claimed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import docker

from sandbox import containers, host_locks, registry, volumes


@dataclass(frozen=True)
class Live:
    session_id: str
    last_active: float  # the registry record's mtime: the sandbox's last call
    org_id: str = ""


def is_live(session_id: str) -> bool:
    """Cheap (no Docker call): the session's container, as last recorded, still runs. False when unsure
    (never recorded, or resumed since without a new record): the caller then takes a census."""
    hint = registry.container_hint(volumes.session_key(session_id))
    return hint is not None and registry.process_start(hint[1], hint[0]) == hint[2]


def live_of_org(api: docker.APIClient, org_id: str) -> list[Live]:
    """The org's running session sandboxes on this host, least recently active first. One Docker call."""
    return live_of_orgs(api, {org_id})


def live_of_orgs(api: docker.APIClient, org_ids: set[str]) -> list[Live]:
    """The running session sandboxes of any of the orgs on this host, least recently active first (for a
    cap per person across the orgs they own). One Docker call."""
    out = []
    for c in api.containers(filters={"name": containers.SESSION_PREFIX, "status": "running"}):
        name = c["Names"][0].lstrip("/")
        if not name.startswith(containers.SESSION_PREFIX):
            continue
        record = registry.lookup(name[len(containers.SESSION_PREFIX) :])
        if record and record.get("org_id") in org_ids:
            out.append(Live(record["session_id"], record.get("last_active", 0.0), record["org_id"]))
    return sorted(out, key=lambda live: live.last_active)


@contextmanager
def org_lock(org_id: str) -> Iterator[None]:
    """Host-wide, per org: two sessions of one org making room at once must not both count the last
    free place (different orgs never wait for each other). `org_id` may also name another group that
    shares a cap (an owner's orgs: "owner-<user id>"); take an org's lock before its owners', owners in
    their order, so that no two callers wait for each other in a cycle."""
    with host_locks.held(f"org-{org_id}.lock"):
        yield
