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
    (an INPUT rule, `host_rules`): replies to the host's connections still pass;
  * its endpoint, the container's address on that network, written to the session registry
    (registry.note_channel) whenever the host sees the container start.
A worker then needs only the registry's files: no Docker socket (sandbox/channel_client.py).

Between hosts (docs/scale-out.md, "The agent channel between hosts"): a host whose engine is reached from
other machines gives its channel network a subnet of its own (HANGAR_AGENT_SUBNET), which the private
network routes to the host's private address, and names its private interface
(HANGAR_AGENT_PRIVATE_IFACE): connections from that interface to port 7070 on the channel network are
forwarded (DOCKER-USER rules, `host_rules`), nothing else is. HANGAR_SANDBOX_NETNS names the network
namespace of the host's Docker engine when it is not this process's own (a second engine on one machine,
deploy/hosts/hostb.sh): its iptables rules are made there.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import subprocess
import threading
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
    with _network_lock:  # two threads' first sandboxes at once made two networks of one name
        return _ensure_network(api, name)


_network_lock = threading.Lock()


def _ensure_network(api: docker.APIClient, name: str) -> str:
    try:
        info = api.inspect_network(name)
    except docker.errors.NotFound:
        for subnet in agent_subnets():
            ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet)]) if subnet else None
            try:
                api.create_network(
                    name,
                    driver="bridge",
                    internal=True,
                    options={"com.docker.network.bridge.enable_icc": "false"},
                    labels={"hangar.managed": "1", "hangar.root": volumes.root_tag()},
                    ipam=ipam,
                    check_duplicate=True,  # another process's made meanwhile: a 409, not a second one
                )
                break
            except docker.errors.APIError as exc:
                if exc.status_code == 409:
                    break  # made meanwhile by another process
                if subnet is None or "overlap" not in str(exc).lower():
                    raise
                # another root's network holds this subnet on the same engine: the next candidate
        info = api.inspect_network(name)
    bridge = f"br-{info['Id'][:12]}"
    for chain, rule in host_rules(bridge, os.environ.get("HANGAR_AGENT_PRIVATE_IFACE", "").strip() or None):
        _ensure_rule(chain, *rule)  # idempotent: checked before it is inserted
    return name


def agent_subnets() -> list[str | None]:
    """The channel network's subnet (HANGAR_AGENT_SUBNET; unset: [None], Docker's pick), as candidates in
    the order to try. A value with `.x.` (e.g. 10.213.x.0/24) stands for the 256 subnets of that range,
    starting at a third octet taken from this sandbox root's tag, so test processes sharing one engine get
    distinct subnets of the one routed range (a taken one is skipped)."""
    value = os.environ.get("HANGAR_AGENT_SUBNET", "").strip()
    if not value:
        return [None]
    if ".x." not in value:
        return [str(ipaddress.ip_network(value))]
    first = int(hashlib.sha256(volumes.root_tag().encode()).hexdigest(), 16) % 256
    return [str(ipaddress.ip_network(value.replace(".x.", f".{(first + i) % 256}."))) for i in range(256)]


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


def host_rules(bridge: str, iface: str | None) -> list[tuple[str, list[str]]]:
    """The iptables rules of a channel bridge, as (chain, rule):
    - `guard_host`: connections a sandbox opens to the host's address on the bridge (Postgres, Redis or
      anything else listening on all interfaces) are dropped. Connections the host opens (to the agents)
      are not NEW when their replies come in, so they pass;
    - `open_private`, with the host's private interface: connections from it to the agents' port on the
      bridge are forwarded, and their replies; nothing else crosses (Docker drops the rest: the network
      is internal). In DOCKER-USER, which Docker's own FORWARD rules come after. A sandbox cannot use
      them: its connections enter from the bridge, not the private interface, and the reply rule passes
      only established flows."""
    rules = [("INPUT", ["-i", bridge, "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"])]
    if iface:
        port = str(AGENT_PORT)
        rules.append(
            ("DOCKER-USER", ["-i", iface, "-o", bridge, "-p", "tcp", "--dport", port, "-j", "ACCEPT"])
        )
        established = ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"]
        rules.append(("DOCKER-USER", ["-i", bridge, "-o", iface, *established]))
    return rules


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
