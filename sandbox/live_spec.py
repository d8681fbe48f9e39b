"""Bringing a live sandbox to a changed spec (a project admin changed its policy while a session runs).

What can change in place does, before the session's next call:
  * env: re-bound in the agent (replaced whole, so a removed variable is gone), seen by the next command;
  * cpus, memory, pids: `docker update` on the running container (the kernel applies them at once);
  * the allowlist (network "allowlist" both before and after): the egress proxy is replaced with the new
    list (egress.ensure); the sandbox keeps its network and the proxy's alias, so its next connection
    goes through the new proxy (connections already open through the old one are cut);
  * command timeout: the next command's default.
What cannot: Docker cannot move a running container between the `none` network and a network of its own,
nor change its image. Then the container is removed and the next call creates it again from the new
spec, on the same workspace volume (files, snapshots and the bound env are kept; running processes and
an open terminal are not). The workspace quota (disk_mb) is a loop image sized at creation: a new quota
applies to a new workspace only, and is reported as such.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import docker
import docker.errors

from sandbox import containers, egress, registry, volumes
from sandbox.protocol import SandboxSpec

if TYPE_CHECKING:
    from sandbox.docker_backend import DockerSandbox
    from sandbox.manager import DockerSandboxes

LIMITS = ("cpus", "memory_mb", "pids")


def _same(a: SandboxSpec, b: SandboxSpec) -> bool:
    ignored = {"org_id": "", "project_id": "", "disk_groups": [], "disk_elsewhere_mb": {}}  # who is billed
    return dataclasses.asdict(a) | ignored == dataclasses.asdict(b) | ignored


def _save_record(spec: SandboxSpec) -> None:
    """The registry keeps the spec other processes reconnect with (a web terminal, the reaper)."""
    key = volumes.session_key(spec.session_id)
    record = registry.lookup(key)
    if record is not None:
        record.pop("last_active", None)
        registry.rewrite(key, record | {"spec": dataclasses.asdict(spec)})


def applied_spec(session_id: str) -> SandboxSpec | None:
    """The spec the session's container was last created with or brought to (the registry's record)."""
    record = registry.lookup(volumes.session_key(session_id))
    if not record or not record.get("spec"):
        return None
    fields = {f.name for f in dataclasses.fields(SandboxSpec)}
    return SandboxSpec(
        **{k: v for k, v in record["spec"].items() if k in fields} | {"session_id": session_id}
    )


def apply(manager: DockerSandboxes, box: DockerSandbox, new: SandboxSpec) -> list[str]:
    """Bring `box` (a DockerSandbox of `manager`) to `new`; returns what was done ([]: nothing differed).
    Compared with the spec the container has (the registry's), not the box's: a process that attaches
    anew builds its box from the new spec while the container still runs under the old one."""
    old = applied_spec(new.session_id) or box.spec
    if _same(old, new):
        box.spec = new
        return []
    done: list[str] = []
    if new.network != old.network or (new.image or None) != (old.image or None):
        _recreate(manager, box, new)
        return [f"recreated: network {old.network}->{new.network}, image {old.image}->{new.image}"]
    if new.network == "allowlist" and new.allowlist != old.allowlist:
        manager._ensure_egress(new)  # a new config label: the proxy is replaced
        done.append("egress allowlist replaced")
    if any(getattr(new, f) != getattr(old, f) for f in LIMITS):
        containers.update_limits(manager.api, box.container_name, new)
        done.append("limits updated")
    if new.env != old.env:
        box._call("bind", {"env": new.env})
        done.append("env re-bound")
    if new.disk_mb != old.disk_mb:
        done.append("disk quota applies to a new workspace only")
    box.spec = new
    _save_record(new)
    return done


def _recreate(manager: DockerSandboxes, box: DockerSandbox, new: SandboxSpec) -> None:
    """Remove the container (the volume and the registry record stay) so the next call creates it from
    `new`: the box's connection is dropped, and its reconnect (`manager.reopen`) finds no container."""
    key = volumes.session_key(new.session_id)
    box.close()
    name = containers.session_container_name(new.session_id)
    try:
        container_id = manager.api.inspect_container(name)["Id"]
        manager.api.remove_container(name, force=True)
        volumes.lock_path(container_id).unlink(missing_ok=True)
    except docker.errors.NotFound:
        pass
    if new.network != "allowlist":
        egress.remove(manager.api, key)  # no proxy is left running for a sandbox that has none
    box.spec = new
    _save_record(new)
