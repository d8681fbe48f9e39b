"""Egress for `network="allowlist"` sandboxes: a per-session internal network plus a proxy.

Per session key:
  network `hangar-net-<key>`  internal=True and no host-side IP (inhibit_ipv4): no route out,
                              not even to the host; nobody else is on it, so neighbours can
                              never reach each other;
  proxy   `hangar-px-<key>`   a hardened container (same image, agent/egress_proxy.py) on that
                              network under the alias `egress` AND on the default bridge.
The sandbox joins only the internal network; HTTP(S)_PROXY in its env point at
http://egress:3128. Whatever the sandbox does with that env, its only way out is the proxy,
which allows only the spec's allowlist (fail closed: an unparsable entry allows nothing).
Every operation here is idempotent and treats "already there"/"already gone" as success.
"""

from __future__ import annotations

import calendar
import hashlib
import ipaddress
import json
import re
import subprocess
import time

import docker
import docker.errors
from docker.types import LogConfig

from sandbox.protocol import SandboxError

NETWORK_PREFIX = "hangar-net-"
PROXY_PREFIX = "hangar-px-"
EGRESS_LABEL = "hangar.egress"
CONFIG_LABEL = "hangar.egress.config"
ALIAS = "egress"
PORT = 3128
PROXY_URL = f"http://{ALIAS}:{PORT}"
_HOST_RE = re.compile(
    r"(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
)


def network_name(key: str) -> str:
    return NETWORK_PREFIX + key


def proxy_name(key: str) -> str:
    return PROXY_PREFIX + key


def sandbox_env() -> dict[str, str]:
    no_proxy = "localhost,127.0.0.1,::1"
    return {
        "HTTP_PROXY": PROXY_URL,
        "HTTPS_PROXY": PROXY_URL,
        "http_proxy": PROXY_URL,
        "https_proxy": PROXY_URL,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


def validate_allowlist(entries: list[str]) -> list[str]:
    """Normalised entries; SandboxError names the first malformed one."""
    out = []
    for raw in entries:
        entry = str(raw).strip().lower().rstrip(".")
        host, port = entry, None
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else (None if not rest else "x")
        elif entry.count(":") == 1:
            host, port = entry.split(":")
        if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
            raise SandboxError(f"allowlist entry {raw!r}: bad port")
        try:
            ipaddress.ip_network(host, strict=False)
        except ValueError:
            if not _HOST_RE.fullmatch(host):
                raise SandboxError(f"allowlist entry {raw!r}: not a hostname, IP or CIDR") from None
        out.append(entry)
    return out


_host_addresses: list[str] | None = None


def host_addresses(api: docker.APIClient) -> list[str]:
    """Addresses of the host itself (interfaces and docker gateways): never reachable through a
    hostname entry even if public, so a name pointed at the host cannot reach its services."""
    global _host_addresses
    if _host_addresses is None:
        found = set()
        try:
            out = subprocess.run(
                ["ip", "-o", "addr", "show"], capture_output=True, text=True, timeout=5
            ).stdout
            found |= {line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3}
        except (OSError, subprocess.SubprocessError):
            pass
        for net in api.networks():
            for cfg in (net.get("IPAM") or {}).get("Config") or []:
                if cfg.get("Gateway"):
                    found.add(cfg["Gateway"])
        _host_addresses = sorted(a for a in found if _is_ip(a))
    return _host_addresses


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def _ensure_network(api: docker.APIClient, key: str, labels: dict[str, str]) -> str:
    name = network_name(key)
    found = api.networks(names=[name])
    found = [n for n in found if n["Name"] == name]
    if not found:
        try:
            # internal=True only stops forwarding: the bridge's host-side IP would still take
            # packets to ANY host address (a sandbox reached host services on 172.17.0.1).
            # inhibit_ipv4 leaves the bridge without a host IP, so the host is not on the path.
            api.create_network(
                name,
                driver="bridge",
                internal=True,
                check_duplicate=True,
                options={"com.docker.network.bridge.inhibit_ipv4": "true"},
                labels={EGRESS_LABEL: key, **labels},
            )
        except docker.errors.APIError as exc:
            if exc.status_code != 409:
                raise
        found = [n for n in api.networks(names=[name]) if n["Name"] == name]
    # API 1.41 only checks duplicates best-effort: if a race made two, keep the oldest.
    found.sort(key=lambda n: n.get("Created", ""))
    for extra in found[1:]:
        try:
            api.remove_network(extra["Id"])
        except docker.errors.APIError:
            pass
    return found[0]["Id"]


def _proxy_kwargs(
    key: str,
    image: str,
    allow: list[str],
    deny: list[str],
    labels: dict[str, str],
    extra_hosts: dict[str, str] | None,
    config: str,
) -> dict:
    return dict(
        image=image,
        name=proxy_name(key),
        detach=True,
        command=["python3", "-S", "-u", "/opt/hangar/agent/egress_proxy.py"],
        labels={EGRESS_LABEL: key, CONFIG_LABEL: config, **labels},
        environment={
            "HANGAR_EGRESS_ALLOW": json.dumps(allow),
            "HANGAR_EGRESS_DENY": json.dumps(deny),
            "HANGAR_EGRESS_PORT": str(PORT),
        },
        user="1000:1000",
        init=True,
        network_mode="bridge",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
        nano_cpus=int(0.5e9),
        mem_limit="64m",
        memswap_limit="64m",
        pids_limit=128,
        ipc_mode="private",
        extra_hosts=extra_hosts or None,
        # Decisions only (host:port, verdict), and bounded: a tenant cannot fill the disk.
        log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
    )


def ensure(
    client: docker.DockerClient,
    *,
    key: str,
    image: str,
    allowlist: list[str],
    labels: dict[str, str],
    extra_hosts: dict[str, str] | None = None,
) -> None:
    """Network and proxy exist and run with this allowlist (a changed allowlist replaces the
    proxy; the sandbox keeps its alias). Safe to call concurrently."""
    api = client.api
    allow = validate_allowlist(allowlist)
    deny = host_addresses(api)
    config = hashlib.sha256(json.dumps([allow, deny, extra_hosts or {}, image]).encode()).hexdigest()[:16]
    net_id = _ensure_network(api, key, labels)
    name = proxy_name(key)
    for _ in range(3):
        try:
            info = api.inspect_container(name)
        except docker.errors.NotFound:
            info = None
        if info is not None and info["Config"]["Labels"].get(CONFIG_LABEL) != config:
            _remove_container(api, name)
            info = None
        if info is None:
            try:
                created = client.containers.create(
                    **_proxy_kwargs(key, image, allow, deny, labels, extra_hosts, config)
                )
            except docker.errors.APIError as exc:
                if exc.status_code == 409:
                    continue  # a racing ensure created it: inspect again
                raise
            api.connect_container_to_network(created.id, net_id, aliases=[ALIAS])
            info = api.inspect_container(name)
        if not info["State"]["Running"]:
            try:
                api.start(name)
            except docker.errors.NotFound:
                continue
        return
    raise SandboxError(f"could not start the egress proxy for {key}")


def stop(api: docker.APIClient, key: str) -> None:
    try:
        api.stop(proxy_name(key), timeout=1)
    except docker.errors.NotFound:
        pass


def _remove_container(api: docker.APIClient, name: str) -> None:
    try:
        api.remove_container(name, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise


def remove(api: docker.APIClient, key: str) -> None:
    """Remove the proxy and the network (after the sandbox container is gone). Idempotent."""
    _remove_container(api, proxy_name(key))
    name = network_name(key)
    for attempt in range(50):
        nets = [n for n in api.networks(names=[name]) if n["Name"] == name]
        if not nets:
            return
        try:
            for net in nets:
                api.remove_network(net["Id"])
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError:
            # "active endpoints": a container is still being torn down; it will be soon.
            if attempt == 49:
                raise
            time.sleep(0.1)


def sweep_orphans(
    api: docker.APIClient, is_bound, only_labels: dict[str, str] | None = None, min_age_s: float = 120
) -> list[str]:
    """Remove proxies/networks whose session key `is_bound(key)` no longer (crash mid-create or
    mid-destroy). Young ones are left alone: their session may be being created right now."""
    labels = [EGRESS_LABEL] + [f"{k}={v}" for k, v in (only_labels or {}).items()]
    keys = set()
    now = time.time()
    for c in api.containers(all=True, filters={"label": labels}):
        if now - c["Created"] > min_age_s:
            keys.add(c["Labels"][EGRESS_LABEL])
    for n in api.networks(filters={"label": labels}):
        info = api.inspect_network(n["Id"])
        created = info.get("Created", "")[:19]  # RFC 3339, UTC
        try:
            age = now - calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            age = min_age_s + 1
        if age > min_age_s:
            keys.add(n["Labels"][EGRESS_LABEL])
    removed = []
    for key in sorted(keys):
        if not is_bound(key):
            remove(api, key)
            removed.append(key)
    return removed
