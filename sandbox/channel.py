"""The host side of the agent's network channel (agent/channel.py): setting, secrets, network, endpoint.

HANGAR_AGENT_TRANSPORT=attach (default) keeps today's path: docker attach or the relay, nothing listens
on TCP. With `tcp`, every sandbox created from then on gets
  * a secret: 32 random bytes, hex, in ROOT/channel/<volume>.key (root's, 0400, in a 0700 directory),
    bind-mounted read-only at the agent's SECRET_PATH. Keyed by volume, not session: a warm-pool
    container is made before any session exists and keeps its volume when a session claims it;
  * the channel network `hangar-agent-<root tag>`: an internal bridge (no route out) with
    inter-container traffic off, so the host reaches every agent and no sandbox reaches another.
    A sandbox with network "none" joins only this network; an "allowlist" one joins it beside its
    egress network. The host's own address on that bridge is closed to connections the sandboxes open
    (an INPUT rule, `guard_host`): replies to the host's connections still pass;
  * its endpoint, the container's address on that network, written to the session registry
    (registry.note_channel) whenever the host sees the container start.
A worker then needs only the registry's files: no Docker socket (sandbox/channel_client.py).

Between hosts (docs/scale-out.md, "The agent channel between hosts"): a host whose engine is reached from
other machines gives its channel network a subnet of its own (HANGAR_AGENT_SUBNET), which the private
network routes to the host's private address, and names its private interface
(HANGAR_AGENT_PRIVATE_IFACE): connections from that interface to port 7070 on the channel network are
forwarded (DOCKER-USER rules, `open_private`), nothing else is. HANGAR_SANDBOX_NETNS names the network
namespace of the host's Docker engine when it is not this process's own (a second engine on one machine,
deploy/hosts/hostb.sh): its iptables rules are made there.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import subprocess
import uuid
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.types import IPAMConfig, IPAMPool, Mount

from sandbox import volumes

SETTING = "HANGAR_AGENT_TRANSPORT"
TRANSPORTS = ("attach", "tcp")
AGENT_PORT = 7070
SECRET_MOUNT = "/etc/hangar/agent.key"  # agent/channel.py SECRET_PATH
NETWORK_PREFIX = "hangar-agent-"
LABEL = "hangar.channel"  # on a container made with the channel: a tcp host's pool hands out only those


def transport() -> str:
    """The configured transport; an unknown value is an error, not a silent fallback."""
    value = os.environ.get(SETTING, "attach").strip() or "attach"
    if value not in TRANSPORTS:
        raise ValueError(f"{SETTING}={value!r}: expected one of {', '.join(TRANSPORTS)}")
    return value


def enabled() -> bool:
    return transport() == "tcp"


def network_name() -> str:
    return NETWORK_PREFIX + volumes.root_tag()


# --- secrets -------------------------------------------------------------------------------------


def secret_path(volume_id: str) -> Path:
    return volumes.channel_secret_path(volume_id)  # removed with the volume (volumes.destroy_volume)


def create_secret(volume_id: str) -> Path:
    """A fresh secret for the volume's container; the file exists whole or not at all."""
    path = secret_path(volume_id)
    tmp = path.with_name(f".{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    try:
        os.write(fd, secrets.token_hex(32).encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_secret(volume_id: str) -> bytes | None:
    try:
        return bytes.fromhex(secret_path(volume_id).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def remove_secret(volume_id: str) -> None:
    secret_path(volume_id).unlink(missing_ok=True)


# --- the network ---------------------------------------------------------------------------------


def ensure_network(api: docker.APIClient) -> str:
    """The channel network, created once per sandbox root (idempotent, race-safe), host side guarded."""
    name = network_name()
    try:
        info = api.inspect_network(name)
    except docker.errors.NotFound:
        subnet = agent_subnet()
        ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet)]) if subnet else None
        try:
            api.create_network(
                name,
                driver="bridge",
                internal=True,
                options={"com.docker.network.bridge.enable_icc": "false"},
                labels={"hangar.managed": "1", "hangar.root": volumes.root_tag()},
                ipam=ipam,
            )
        except docker.errors.APIError as exc:
            if exc.status_code != 409:
                raise
        info = api.inspect_network(name)
    bridge = f"br-{info['Id'][:12]}"
    guard_host(bridge)
    if iface := os.environ.get("HANGAR_AGENT_PRIVATE_IFACE", "").strip():
        open_private(bridge, iface)
    return name


def agent_subnet() -> str | None:
    """The channel network's subnet (HANGAR_AGENT_SUBNET; unset: Docker's pick). A value ending in
    `.x.0/24` (e.g. 10.213.x.0/24) takes its third octet from this sandbox root's tag, so test processes
    sharing one engine get distinct subnets of the one routed range."""
    value = os.environ.get("HANGAR_AGENT_SUBNET", "").strip()
    if not value:
        return None
    if ".x." in value:
        value = value.replace(
            ".x.", f".{int(hashlib.sha256(volumes.root_tag().encode()).hexdigest(), 16) % 256}."
        )
    return str(ipaddress.ip_network(value))


def _iptables(*args: str) -> subprocess.CompletedProcess[bytes]:
    """iptables in the engine's network namespace (HANGAR_SANDBOX_NETNS, or this process's)."""
    netns = os.environ.get("HANGAR_SANDBOX_NETNS", "").strip()
    prefix = ["nsenter", f"--net=/run/netns/{netns}"] if netns else []
    return subprocess.run([*prefix, "iptables", *args], capture_output=True)


def _ensure_rule(chain: str, *rule: str) -> None:
    if _iptables("-C", chain, *rule).returncode != 0:
        proc = _iptables("-I", chain, *rule)
        if proc.returncode != 0:
            raise RuntimeError(f"iptables -I {chain} {' '.join(rule)}: {proc.stderr.decode().strip()}")


def open_private(bridge: str, iface: str) -> None:
    """Forward connections from the private interface to the agents' port on the channel bridge, and their
    replies; nothing else crosses (Docker drops the rest: the network is internal). In DOCKER-USER, which
    Docker's own FORWARD rules come after. A sandbox cannot use this: its connections enter from the
    bridge, not the private interface, and the reply rule passes only established flows."""
    _ensure_rule(
        "DOCKER-USER", "-i", iface, "-o", bridge, "-p", "tcp", "--dport", str(AGENT_PORT), "-j", "ACCEPT"
    )
    _ensure_rule(
        "DOCKER-USER",
        "-i",
        bridge,
        "-o",
        iface,
        "-m",
        "conntrack",
        "--ctstate",
        "ESTABLISHED,RELATED",
        "-j",
        "ACCEPT",
    )


def guard_host(bridge: str) -> None:
    """Drop connections a sandbox opens to the host's address on the channel bridge (Postgres, Redis or
    anything else listening on all interfaces). Connections the host opens (to the agents) are not NEW
    when their replies come in, so they pass. Idempotent: checked before it is inserted."""
    _ensure_rule("INPUT", "-i", bridge, "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP")


def secret_mount(volume_id: str) -> Mount:
    """A fresh secret for the volume's container, mounted where the agent reads it (read-only; the file
    stays root's 0400, so only the agent, still root when it reads, can)."""
    return Mount(SECRET_MOUNT, str(create_secret(volume_id)), type="bind", read_only=True)


_ready: set[str] = set()  # networks this process has made sure of (one inspect per process, not per box)


def prepare(api: docker.APIClient) -> None:
    """Before a container is created: the channel network exists (when the channel is on)."""
    if enabled() and network_name() not in _ready:
        _ready.add(ensure_network(api))


def after_create(api: docker.APIClient, container: str, network_policy: str) -> None:
    """A created, not yet started container of policy "allowlist" joins the channel network beside its
    egress network ("none" ones are created on it: containers.create_kwargs)."""
    if enabled() and network_policy == "allowlist":
        join(api, container)


def join(api: docker.APIClient, container: str) -> None:
    """Put a created (not yet started) container on the channel network beside its own (allowlist)."""
    api.connect_container_to_network(container, network_name())


def endpoint_of(info: dict[str, Any]) -> tuple[str, int] | None:
    """The agent's (address, port) from a container's inspect: its address on the channel network."""
    networks = (info.get("NetworkSettings") or {}).get("Networks") or {}
    address = (networks.get(network_name()) or {}).get("IPAddress")
    return (str(address), AGENT_PORT) if address else None
