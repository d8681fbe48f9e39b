"""How a sandbox container is created: names, labels, limits and the security profile."""

from __future__ import annotations

from typing import Any

import docker
from docker.types import LogConfig, Mount

from sandbox import channel, egress, volumes
from sandbox.protocol import WORKSPACE, SandboxSpec

MANAGED = "hangar.managed"
SESSION_PREFIX = "hangar-s-"
POOL_PREFIX = "hangar-pool-"
STATE_MOUNT = "/home/hangar/.hangar"
TMP_MB = 256
RUN_DIR = "/run/hangar"


def session_container_name(session_id: str) -> str:
    return SESSION_PREFIX + volumes.session_key(session_id)


def create_kwargs(
    spec: SandboxSpec, image: str, name: str, volume_id: str, labels: dict[str, str]
) -> dict[str, Any]:
    """docker-py `containers.create` arguments. Every limit is enforced by the kernel via Docker."""
    if spec.network == "allowlist":
        # Only the session's internal network (no route out); the proxy there is the way out.
        network_mode, environment = (
            egress.network_name(volumes.session_key(spec.session_id)),
            egress.sandbox_env(),
        )
    elif spec.network == "none":
        # With the TCP agent channel, "none" is the channel network alone: internal, no neighbour
        # reachable, the host's address closed (sandbox/channel.py); its only use is the host's
        # connections to the agent.
        network_mode = channel.network_name() if channel.enabled() else "none"
        environment = {}  # nothing of the worker's env
    else:
        raise ValueError(f"unknown network policy {spec.network!r}")  # fail closed
    mnt = volumes.mount_point(volume_id)
    # The channel's secret: a root-only file only the agent reads (before it drops to uid 1000).
    secret = [channel.secret_mount(volume_id)] if channel.enabled() else []
    memory = f"{spec.memory_mb}m"
    return dict(
        image=image,
        name=name,
        detach=True,
        labels={
            MANAGED: "1",
            "hangar.volume": volume_id,
            **labels,
            **({channel.LABEL: "1"} if secret else {}),
        },
        # The agent speaks JSON on stdin/stdout; stdin stays open across attaches.
        stdin_open=True,
        tty=False,
        command=None,
        # Root starts the container only so the agent can bind its relay socket in a root-owned
        # directory and then drop to uid 1000 for good (agent/main.py): the uid change leaves it
        # non-dumpable, so its /proc/<pid>/fd, mem and ptrace are closed to the commands (also uid
        # 1000, no capabilities), and init's stdout, the agent's pipe, belongs to root. SETUID/SETGID
        # are the only capabilities, for that one drop; no-new-privileges still holds.
        user="0:0",
        working_dir=WORKSPACE,
        environment=environment,
        init=True,  # docker-init (tini) reaps zombies and forwards signals to the agent
        network_mode=network_mode,
        read_only=True,
        cap_drop=["ALL"],
        cap_add=["SETUID", "SETGID"],
        security_opt=["no-new-privileges:true"],
        nano_cpus=int(spec.cpus * 1e9),
        mem_limit=memory,
        memswap_limit=memory,  # equal: no swap on top of the memory limit
        pids_limit=spec.pids,
        tmpfs={
            "/tmp": f"rw,nosuid,nodev,size={TMP_MB}m",
            "/home/hangar": "rw,nosuid,nodev,size=64m,uid=1000,gid=1000,mode=0755",
            # The relay socket's home: root's, so no command can replace the socket.
            RUN_DIR: "rw,nosuid,nodev,noexec,size=64k,mode=0700",
        },
        mounts=[
            # rslave: an overlay the host mounts on workspace/ later (a warm-pool claim) shows here.
            Mount(WORKSPACE, str(mnt / "workspace"), type="bind", propagation="rslave"),
            Mount(STATE_MOUNT, str(mnt / "state"), type="bind"),
            *secret,
        ],
        # Replies carry file contents and command output: never copy them into docker's logs
        # (a flood would fill the host disk). Attach still works with the `none` driver.
        log_config=LogConfig(type="none"),
        ipc_mode="private",
        ulimits=None,
    )


def update_limits(api: docker.APIClient, container: str, spec: SandboxSpec) -> None:
    """Bring a running container's CPUs, memory (no swap on top) and pids to `spec`'s: the kernel applies
    them at once. docker-py's update_container knows neither NanoCpus nor PidsLimit: the Engine API does."""
    memory = spec.memory_mb * 1024 * 1024
    data = {"NanoCpus": int(spec.cpus * 1e9), "Memory": memory, "MemorySwap": memory, "PidsLimit": spec.pids}
    api._result(api._post_json(api._url("/containers/{0}/update", container), data=data), True)
