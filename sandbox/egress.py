"""Egress for `network="allowlist"` sandboxes: a per-session internal network plus a proxy.

Per session key:
  network `hangar-net-<key>`  internal=True and no host-side IP (inhibit_ipv4): no route out,
                              not even to the host; nobody else is on it, so neighbours can
                              never reach each other;
  network `hangar-out-<key>`  the proxy's way out: a bridge of its own (not the shared default
                              bridge, where every tenant's proxy could reach every other's);
  proxy   `hangar-px-<key>`   a hardened container (same image, agent/egress_proxy.py) on the
                              internal network under the alias `egress` and on its outbound one.
The sandbox joins only the internal network; HTTP(S)_PROXY in its env point at
http://egress:3128. Whatever the sandbox does with that env, its only way out is the proxy,
which allows only the spec's allowlist (fail closed: an unparsable entry allows nothing), under the
address policy of agent/netpolicy.py (the operator opens private ranges with
HANGAR_EGRESS_ALLOW_PRIVATE; loopback, link-local and metadata addresses never open).
Every operation here is idempotent and treats "already there"/"already gone" as success.
"""

from __future__ import annotations

import calendar
import hashlib
import ipaddress
import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

import docker
import docker.errors
from docker.types import LogConfig

from sandbox.agent import netpolicy
from sandbox.protocol import SandboxError

NETWORK_PREFIX = "hangar-net-"
OUTBOUND_PREFIX = "hangar-out-"
PROXY_PREFIX = "hangar-px-"
EGRESS_LABEL = "hangar.egress"
CONFIG_LABEL = "hangar.egress.config"
ALIAS = "egress"
PORT = 3128
PROXY_URL = f"http://{ALIAS}:{PORT}"
HOST_CACHE_S = 30


def network_name(key: str) -> str:
    return NETWORK_PREFIX + key


def outbound_name(key: str) -> str:
    return OUTBOUND_PREFIX + key


def operator_ranges() -> list[str]:
    """The ranges the operator opened (HANGAR_EGRESS_ALLOW_PRIVATE, comma-separated CIDRs)."""
    return [str(n) for n in netpolicy.parse_ranges(os.environ.get("HANGAR_EGRESS_ALLOW_PRIVATE", ""))]


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


def validate_allowlist(
    entries: list[str], operator: Sequence[str] = (), deny: Sequence[str] = ()
) -> list[str]:
    """Normalised entries; SandboxError names the first bad one (`allowlist[i]`) and why."""
    ranges = [ipaddress.ip_network(r, strict=False) for r in operator]
    denied = [ipaddress.ip_network(d, strict=False) for d in deny]
    out = []
    for index, raw in enumerate(entries):
        try:
            out.append(netpolicy.check_entry(raw, ranges, denied))
        except ValueError as exc:
            raise SandboxError(f"allowlist[{index}] {str(raw)[:100]!r}: {exc}") from None
    return out


_host_addresses: tuple[float, list[str]] | None = None


def interface_addresses() -> list[str]:
    """The addresses of this machine's own network interfaces (`ip addr`); [] when unreadable."""
    try:
        out = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = {line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3}
    return sorted(a for a in found if _is_ip(a))


def host_addresses(api: docker.APIClient) -> list[str]:
    """The host's own addresses (interfaces, Docker gateways) and Docker's subnets: never reachable unless
    the operator opened them, even where they are public. Cached briefly: networks come and go."""
    global _host_addresses
    if _host_addresses is None or time.monotonic() - _host_addresses[0] > HOST_CACHE_S:
        found = set(interface_addresses())
        for net in api.networks():
            for cfg in (net.get("IPAM") or {}).get("Config") or []:
                found |= {cfg[k] for k in ("Gateway", "Subnet") if cfg.get(k)}
        _host_addresses = (time.monotonic(), sorted(a for a in found if _is_ip(a)))
    return _host_addresses[1]


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
        return True
    except ValueError:
        return False


def _ensure_network(api: docker.APIClient, key: str, labels: dict[str, str], *, internal: bool) -> str:
    name = network_name(key) if internal else outbound_name(key)
    found = api.networks(names=[name])
    found = [n for n in found if n["Name"] == name]
    if not found:
        # internal=True only stops forwarding: the bridge's host-side IP would still take packets to
        # ANY host address (a sandbox reached host services on 172.17.0.1). inhibit_ipv4 leaves the
        # bridge without a host IP, so the host is not on the path. The outbound network has one
        # member (the proxy), and icc off besides.
        options = (
            {"com.docker.network.bridge.inhibit_ipv4": "true"}
            if internal
            else {"com.docker.network.bridge.enable_icc": "false"}
        )
        try:
            api.create_network(
                name,
                driver="bridge",
                internal=internal,
                check_duplicate=True,
                options=options,
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
    network_id: str = found[0]["Id"]
    return network_id


def _proxy_kwargs(
    key: str,
    image: str,
    allow: list[str],
    deny: list[str],
    operator: list[str],
    labels: dict[str, str],
    extra_hosts: dict[str, str] | None,
    config: str,
) -> dict[str, Any]:
    return dict(
        image=image,
        name=proxy_name(key),
        detach=True,
        command=["python3", "-S", "-u", "/opt/hangar/agent/egress_proxy.py"],
        labels={EGRESS_LABEL: key, CONFIG_LABEL: config, **labels},
        environment={
            "HANGAR_EGRESS_ALLOW": json.dumps(allow),
            "HANGAR_EGRESS_DENY": json.dumps(deny),
            "HANGAR_EGRESS_PRIVATE": json.dumps(operator),
            "HANGAR_EGRESS_PORT": str(PORT),
        },
        user="1000:1000",
        init=True,
        network_mode=outbound_name(key),
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
    operator: list[str] | None = None,
) -> None:
    """Networks and proxy exist and run with this allowlist (a changed allowlist or operator setting
    replaces the proxy; the sandbox keeps its alias). Safe to call concurrently. `operator`: the private
    ranges opened (default: HANGAR_EGRESS_ALLOW_PRIVATE)."""
    api = client.api
    operator = operator_ranges() if operator is None else [str(ipaddress.ip_network(r)) for r in operator]
    deny = host_addresses(api)
    allow = validate_allowlist(allowlist, operator, deny)
    # Not the deny list: it moves with every network created, and the proxy would be replaced each time.
    config = hashlib.sha256(json.dumps([allow, operator, extra_hosts or {}, image]).encode()).hexdigest()[:16]
    _ensure_network(api, key, labels, internal=False)
    net_id = _ensure_network(api, key, labels, internal=True)
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
                    **_proxy_kwargs(key, image, allow, deny, operator, labels, extra_hosts, config)
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


MAX_DENIALS = 50  # destinations reported per read (the log itself is capped at 1 MB)
DENY_VERDICTS = ("deny", "deny-sni")


def denials(api: docker.APIClient, key: str, since: float) -> list[str]:
    """The destinations ("METHOD host:port") the proxy of sandbox `key` refused since `since` (unix
    seconds), each once, in order, at most MAX_DENIALS; [] when the sandbox has no proxy. Read from the
    proxy's own decision log (`log` in sandbox/agent/egress_proxy.py: verdict, method, host:port)."""
    try:
        raw = api.logs(proxy_name(key), stdout=False, stderr=True, since=int(since), tail=5000)
    except docker.errors.NotFound:
        return []
    found: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        verdict, _, target = line.strip().partition(" ")
        if verdict in DENY_VERDICTS and target and target not in found:
            found.append(target[:300])
            if len(found) == MAX_DENIALS:
                break
    return found


def _remove_container(api: docker.APIClient, name: str) -> None:
    try:
        api.remove_container(name, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise


def remove(api: docker.APIClient, key: str) -> None:
    """Remove the proxy and its networks (after the sandbox container is gone). Idempotent."""
    _remove_container(api, proxy_name(key))
    for name in (network_name(key), outbound_name(key)):
        _remove_network(api, name)


def _remove_network(api: docker.APIClient, name: str) -> None:
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
    api: docker.APIClient,
    is_bound: Callable[[str], bool],
    only_labels: dict[str, str] | None = None,
    min_age_s: float = 120,
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
