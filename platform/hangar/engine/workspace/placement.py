"""Placement: which sandbox host a new session's sandbox goes to (docs/scale-out.md, "Placement").

A pure function over what the registry says of each host (hangar.conversations.models.SandboxHost, read
by hangar.engine.workspace.hosts): no database, no Docker, so it is tested on its own
(tests/engine/fast/test_placement.py). In order:
- only `active` hosts (a draining, drained or lost one takes no new session);
- the project's required labels must all be among the host's;
- room: the host's free memory and free disk over what the sandbox's shape asks (its memory limit and
  disk quota; they are caps, not reservations, so this is the conservative reading);
- then the fewest live sandboxes of the session's org (each org's sessions spread over the hosts), then
  the most free memory, then the name (a stable answer for equal hosts).

When no host qualifies the refusal says why for each host, in words a person can act on: it becomes the
turn's error (the sandbox could not be started: ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sandbox.protocol import SandboxUnavailable


@dataclass(frozen=True)
class HostView:
    """What placement needs of one host, as its last heartbeat reported it."""

    name: str
    state: str
    labels: frozenset[str] = frozenset()
    free_memory_mb: int = 0
    free_disk_mb: int = 0
    org_live: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Asks:
    """What the new session's sandbox needs of a host."""

    org_id: str
    memory_mb: int
    disk_mb: int
    labels: frozenset[str] = frozenset()


class NoHost(Exception):
    """No host may take the session; the message says why, host by host."""


class BoundElsewhere(SandboxUnavailable):
    """The session is bound to another host than the one asked (another worker placed it there first, or
    moved it): whoever asked goes to `host`, where its workspace is."""

    def __init__(self, message: str, host: str) -> None:
        super().__init__(message)
        self.host = host


def place(hosts: Iterable[HostView], asks: Asks) -> HostView:
    """The host for a new session's sandbox, or NoHost saying why there is none."""
    fit: list[HostView] = []
    refusals: list[str] = []
    for host in hosts:
        why = refusal(host, asks)
        if why:
            refusals.append(f"{host.name} {why}")
        else:
            fit.append(host)
    if not fit:
        raise NoHost(_no_host_message(refusals))
    return min(fit, key=lambda h: (h.org_live.get(asks.org_id, 0), -h.free_memory_mb, h.name))


def refusal(host: HostView, asks: Asks) -> str:
    """Why `host` cannot take the session ('' when it can)."""
    if host.state != "active":
        return _STATE_REFUSALS.get(host.state, f"is {host.state}")
    missing = sorted(asks.labels - host.labels)
    if missing:
        return f"lacks the project's required label{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if host.free_memory_mb < asks.memory_mb:
        return f"has {host.free_memory_mb} MB of memory free, the sandbox asks {asks.memory_mb} MB"
    if host.free_disk_mb < asks.disk_mb:
        return f"has {host.free_disk_mb} MB of disk free, the sandbox asks {asks.disk_mb} MB"
    return ""


_STATE_REFUSALS = {
    "draining": "is draining (the operator is taking it out of service)",
    "drained": "is drained (out of service)",
    "lost": "is lost (its heartbeat stopped)",
}


def _no_host_message(refusals: Sequence[str]) -> str:
    if not refusals:
        return "no sandbox host is registered (no worker with a sandbox root has started)"
    return "no sandbox host can take this session: " + "; ".join(refusals)
