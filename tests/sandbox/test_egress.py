"""network="allowlist": the sandbox reaches the allowlisted host:port through its egress proxy,
and nothing else: not other ports, not the metadata address, not the host's services, not a
neighbour, not the outside without the proxy. Real Docker, real sockets; no internet here, so
hostname entries are exercised against names the proxy resolves from its own /etc/hosts."""

from __future__ import annotations

import http.server
import importlib
import ipaddress
import threading
import uuid

import docker.errors
import pytest

from sandbox import egress, registry, volumes
from sandbox.image.build import AGENT_DIR
from sandbox.manager import DockerSandboxes
from sandbox.pool import WarmPool
from sandbox.protocol import SandboxError, SandboxSpec
from sandbox.reaper import Reaper
from tests.sandbox.conftest import RUN_ID, TEST_LABEL, host_gateway_ip

FETCH = r"""
import http.client, socket, sys, urllib.error, urllib.request
mode, target = sys.argv[1], sys.argv[2]
wait = float(sys.argv[3]) if len(sys.argv) > 3 else 10
try:
    if mode == "get":  # plain HTTP through the proxy (urllib reads http_proxy)
        print("OK", urllib.request.urlopen(target, timeout=wait).read().decode())
    elif mode == "connect":  # HTTP CONNECT tunnel (what HTTPS uses), then a request inside it
        host, port = target.rsplit(":", 1)
        c = http.client.HTTPConnection("egress", 3128, timeout=10)
        c.set_tunnel(host, int(port))
        c.request("GET", "/")
        print("OK", c.getresponse().read().decode())
    elif mode == "direct":  # bypass the proxy entirely
        host, port = target.rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=wait)
        print("OK connected")
except urllib.error.HTTPError as e:
    print("HTTP", e.code)
except OSError as e:
    print("ERR", e)
"""


# A real ClientHello (Python's own TLS stack, into a memory BIO) for `sni`, sent down a CONNECT tunnel.
TLS_HELLO = r"""
import socket, ssl, sys
host, port, sni = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("egress", 3128), timeout=10)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(incoming, outgoing, server_hostname=sni)
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
s.sendall(outgoing.read())
try:
    data = s.recv(4096)
except OSError:
    data = b""
print(head.split(b"\r\n")[0].decode(), "|", "UPSTREAM" if data else "CLOSED")
"""


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"hello from {self.server.server_address[1]}".encode()
        if self.path == "/host":  # what the request said its host was, every Host header of it
            body = "|".join(self.headers.get_all("Host") or []).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def host_servers():
    """Two HTTP servers on the host (all interfaces, ephemeral ports): one allowlisted, one not."""
    servers = [http.server.ThreadingHTTPServer(("0.0.0.0", 0), _Hello) for _ in range(2)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    yield [s.server_address[1] for s in servers]
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.fixture(scope="module")
def gw():
    return host_gateway_ip()


@pytest.fixture(scope="module")
def net_manager(docker_client, image, gw):
    # Names the proxy (and only the proxy) resolves: a stand-in for DNS, which we do not have.
    # rebind.test: a private address the operator did not open (refused before any packet is sent).
    hosts = {"allowed.test": gw, "rebind.test": "10.255.255.1", "meta.test": "169.254.169.254"}
    # The host servers stand in for an operator's private mirror: the operator opens exactly their address.
    return DockerSandboxes(
        docker_client,
        image=image,
        extra_labels=TEST_LABEL,
        egress_extra_hosts=hosts,
        egress_allow_private=[f"{gw}/32"],
    )


def _allow_spec(sid: str, gw: str, ports: list[int]) -> SandboxSpec:
    allowed, other = ports
    return SandboxSpec(
        session_id=sid,
        memory_mb=256,
        pids=128,
        disk_mb=64,
        network="allowlist",
        allowlist=[f"{gw}:{allowed}", f"allowed.test:{allowed}", f"rebind.test:{other}", "meta.test"],
    )


@pytest.fixture(scope="module")
def netbox(net_manager, gw, host_servers):
    sid = f"t{RUN_ID}-net-{uuid.uuid4().hex[:6]}"
    box = net_manager.get_or_create(_allow_spec(sid, gw, host_servers))
    box.write("fetch.py", FETCH)
    yield box
    net_manager.destroy(sid)


def fetch(box, mode: str, target: str, wait: float = 10) -> str:
    return box.exec(f"python3 fetch.py {mode} {target} {wait}", timeout_s=30).output.strip()


# Fail a lookup fast: the internal network's resolver only knows its own containers.
NO_DNS = "RES_OPTIONS='timeout:1 attempts:1' getent hosts {} || echo nodns"


def test_the_allowlisted_host_port_is_reached_through_the_proxy(netbox, gw, host_servers):
    allowed = host_servers[0]
    assert fetch(netbox, "get", f"http://{gw}:{allowed}/x") == f"OK hello from {allowed}"
    assert fetch(netbox, "connect", f"{gw}:{allowed}") == f"OK hello from {allowed}"
    assert "HTTP_PROXY=http://egress:3128" in netbox.exec("env").output


def test_the_same_host_on_another_port_is_refused_with_403(netbox, gw, host_servers):
    other = host_servers[1]
    assert fetch(netbox, "get", f"http://{gw}:{other}/") == "HTTP 403"
    assert "403" in fetch(netbox, "connect", f"{gw}:{other}")


@pytest.mark.parametrize(
    "target", ["169.254.169.254:80", "GW:5432", "GW:6379", "127.0.0.1:3128", "1.1.1.1:443"]
)
def test_metadata_host_services_and_unlisted_addresses_are_refused(netbox, gw, target):
    target = target.replace("GW", gw)
    assert "403" in fetch(netbox, "connect", target)
    if not target.startswith("127."):  # NO_PROXY sends loopback to the sandbox's own lo
        assert fetch(netbox, "get", f"http://{target}/") == "HTTP 403"


def test_a_name_not_on_the_list_is_refused(netbox, host_servers):
    assert "403" in fetch(netbox, "connect", "example.com:443")
    assert fetch(netbox, "get", f"http://notlisted.test:{host_servers[0]}/") == "HTTP 403"


def test_a_listed_name_is_resolved_by_the_proxy_and_reaches_an_explicitly_listed_address(
    netbox, host_servers
):
    allowed = host_servers[0]
    assert fetch(netbox, "get", f"http://allowed.test:{allowed}/") == f"OK hello from {allowed}"
    assert fetch(netbox, "connect", f"allowed.test:{allowed}") == f"OK hello from {allowed}"


def test_a_listed_name_that_resolves_to_a_private_or_metadata_address_is_refused(netbox, host_servers):
    # rebind.test is listed (by name) on the second port, but resolves to a private address the
    # operator did not open: DNS cannot smuggle a private target in.
    assert "403" in fetch(netbox, "connect", f"rebind.test:{host_servers[1]}")
    assert fetch(netbox, "get", "http://meta.test/latest/meta-data/") == "HTTP 403"


def test_bypassing_the_proxy_fails_on_the_internal_network(netbox, gw, host_servers):
    for port in (host_servers[0], 5432, 6379):  # the host is not even on the path
        out = fetch(netbox, "direct", f"{gw}:{port}", 2)
        assert out.startswith("ERR"), out
    out = netbox.exec(
        f"env -u http_proxy -u HTTP_PROXY python3 fetch.py get http://{gw}:{host_servers[0]}/ 2", timeout_s=30
    ).output
    assert out.startswith("ERR"), out
    assert "nodns" in netbox.exec(NO_DNS.format("example.com")).output


def test_a_neighbour_allowlist_sandbox_is_unreachable(
    netbox, net_manager, docker_client, gw, host_servers, new_session_id
):
    sid = new_session_id()
    other = net_manager.get_or_create(_allow_spec(sid, gw, host_servers))
    other.exec("nohup python3 -m http.server 8000 >/dev/null 2>&1 &")
    key = volumes.session_key(sid)
    info = docker_client.api.inspect_container(other.container_name)
    ip = info["NetworkSettings"]["Networks"][egress.network_name(key)]["IPAddress"]
    assert ip
    for _ in range(50):  # the neighbour's server is up (seen from inside the neighbour)
        if (
            "OK"
            in other.exec(
                "python3 -c \"import socket;socket.create_connection(('127.0.0.1',8000),1);print('OK')\""
            ).output
        ):
            break
    else:
        pytest.fail("the neighbour's server never came up")
    assert fetch(netbox, "direct", f"{ip}:8000", 2).startswith("ERR")
    assert "403" in fetch(netbox, "connect", f"{ip}:8000")
    assert "nodns" in netbox.exec(NO_DNS.format(f"{egress.proxy_name(key)} {other.container_name}")).output


def test_the_proxy_container_is_hardened(netbox, docker_client):
    info = docker_client.api.inspect_container(egress.proxy_name(volumes.session_key(netbox.session_id)))
    host = info["HostConfig"]
    assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert info["Config"]["User"] == "1000:1000"
    assert host["Memory"] == 64 * 1024 * 1024 and host["PidsLimit"] == 128
    assert set(info["NetworkSettings"]["Networks"]) == {
        egress.outbound_name(volumes.session_key(netbox.session_id)),
        egress.network_name(volumes.session_key(netbox.session_id)),
    }
    net = docker_client.api.inspect_network(egress.network_name(volumes.session_key(netbox.session_id)))
    assert net["Internal"] is True and net["Options"]["com.docker.network.bridge.inhibit_ipv4"] == "true"


def _exists(api, key: str) -> tuple[bool, bool]:
    try:
        api.inspect_container(egress.proxy_name(key))
        proxy = True
    except docker.errors.NotFound:
        proxy = False
    return proxy, bool(
        [n for n in api.networks(names=[egress.network_name(key)]) if n["Name"] == egress.network_name(key)]
    )


def test_hibernate_removes_both_and_the_networks_resume_makes_them_again_destroy_removes_all(
    net_manager, docker_client, gw, host_servers, new_session_id
):
    """A hibernated session keeps no container and no network in Docker: ten thousand of them would be
    twenty thousand networks. Resume makes the proxy and its networks again before the sandbox."""
    sid = new_session_id()
    key = volumes.session_key(sid)
    api = docker_client.api
    net_manager.get_or_create(_allow_spec(sid, gw, host_servers))
    net_manager.hibernate(sid)
    assert _exists(api, key) == (False, False)
    assert not net_manager.is_running(sid)
    box = net_manager.resume(sid)
    assert api.inspect_container(egress.proxy_name(key))["State"]["Running"]
    box.write("fetch.py", FETCH)
    assert fetch(box, "get", f"http://{gw}:{host_servers[0]}/") == f"OK hello from {host_servers[0]}"
    net_manager.destroy(sid)
    assert _exists(api, key) == (False, False)
    net_manager.destroy(sid)  # idempotent


def test_a_malformed_entry_fails_before_anything_is_created(net_manager, docker_client, new_session_id):
    sid = new_session_id()
    with pytest.raises(SandboxError, match="bad port"):
        net_manager.get_or_create(
            SandboxSpec(session_id=sid, network="allowlist", allowlist=["pypi.org:99999"])
        )
    assert registry.lookup(volumes.session_key(sid)) is None
    assert _exists(docker_client.api, volumes.session_key(sid)) == (False, False)


def test_the_pool_never_hands_a_none_container_to_an_allowlist_spec(
    docker_client, image, gw, host_servers, new_session_id
):
    with pytest.raises(ValueError):
        WarmPool(
            1, template=SandboxSpec(session_id="pool", network="allowlist"), client=docker_client, image=image
        )
    template = SandboxSpec(session_id="pool", memory_mb=256, pids=128, disk_mb=64)
    pool = WarmPool(1, template=template, client=docker_client, image=image, extra_labels=TEST_LABEL)
    manager = DockerSandboxes(
        docker_client, image=image, extra_labels=TEST_LABEL, pool=pool, egress_allow_private=[f"{gw}/32"]
    )
    try:
        pool.fill()
        pooled = pool.available()
        sid = new_session_id()
        spec = _allow_spec(sid, gw, host_servers)
        assert not pool.fits(spec)
        box = manager.get_or_create(spec)  # the cold path, with its own network and proxy
        assert pool.available() == pooled and box.container_name not in pooled
        networks = docker_client.api.inspect_container(box.container_name)["NetworkSettings"]["Networks"]
        assert list(networks) == [egress.network_name(volumes.session_key(sid))]
    finally:
        pool.drain()


def test_the_reaper_removes_egress_left_by_a_crash(net_manager, docker_client, image):
    key = f"t{RUN_ID}-orphan-{uuid.uuid4().hex[:6]}"
    egress.ensure(docker_client, key=key, image=image, allowlist=["pypi.org"], labels=TEST_LABEL)
    assert _exists(docker_client.api, key) == (True, True)
    young = Reaper(net_manager, lambda s: True, only_labels=TEST_LABEL).run_once()
    assert f"egress:{key}" not in young.destroyed  # may be mid-create: left alone
    report = Reaper(net_manager, lambda s: True, only_labels=TEST_LABEL, orphan_min_age_s=0).run_once()
    assert f"egress:{key}" in report.destroyed
    assert _exists(docker_client.api, key) == (False, False)


@pytest.mark.parametrize(
    "entry",
    ["169.254.169.254", "0.0.0.0/0:6379", "127.0.0.1:5432", "GW", "BRIDGE", "10.0.0.0/8", "[fe80::1]:80"],
)
def test_ip_entries_for_metadata_loopback_the_host_or_private_ranges_are_refused_before_anything_exists(
    docker_client, image, gw, new_session_id, entry
):
    bridge = docker_client.api.inspect_network("bridge")["IPAM"]["Config"][0]["Subnet"]
    entry = entry.replace("GW", gw).replace("BRIDGE", bridge)
    manager = DockerSandboxes(docker_client, image=image, extra_labels=TEST_LABEL)
    sid = new_session_id()
    with pytest.raises(SandboxError, match=r"allowlist\[1\]"):
        manager.get_or_create(SandboxSpec(session_id=sid, network="allowlist", allowlist=["pypi.org", entry]))
    assert registry.lookup(volumes.session_key(sid)) is None
    assert _exists(docker_client.api, volumes.session_key(sid)) == (False, False)


def test_the_proxy_itself_refuses_explicit_entries_for_metadata_loopback_and_the_host(monkeypatch):
    # Defence in depth: a proxy started with entries that slipped past validation still refuses them.
    monkeypatch.syspath_prepend(str(AGENT_DIR))  # as in its container: the agent's modules side by side
    egress_proxy = importlib.import_module("egress_proxy")

    rules = egress_proxy.Rules(
        ["169.254.169.254", "0.0.0.0/0:6379", "127.0.0.1", "172.17.0.1", "10.0.0.0/8:80", "[::ffff:7f00:1]"],
        deny=["172.17.0.1/32"],
    )
    for host, port in [
        ("169.254.169.254", 80),
        ("172.17.0.1", 6379),
        ("8.8.8.8", 6379),  # allowed by 0.0.0.0/0:6379 (public), the one thing that entry may reach
        ("127.0.0.1", 80),
        ("172.17.0.1", 80),
        ("10.1.2.3", 80),
        ("::ffff:127.0.0.1", 443),
    ]:
        expected = [ipaddress.ip_address(host)] if host == "8.8.8.8" else []
        assert rules.resolve(host, port) == expected, host
    opened = egress_proxy.Rules(
        ["10.0.0.0/8:80", "169.254.169.254"], deny=[], private=["10.0.0.0/8", "169.254.0.0/16"]
    )
    assert opened.resolve("10.1.2.3", 80) and not opened.resolve("169.254.169.254", 80)


def test_each_proxy_has_an_outbound_network_of_its_own(netbox, docker_client):
    key = volumes.session_key(netbox.session_id)
    info = docker_client.api.inspect_container(egress.proxy_name(key))
    assert "bridge" not in info["NetworkSettings"]["Networks"]
    out = docker_client.api.inspect_network(egress.outbound_name(key))
    assert list(out["Containers"]) == [info["Id"]]  # no neighbour: no other proxy, no other tenant


def test_a_connect_tunnel_whose_tls_sni_names_another_host_is_closed(netbox, host_servers):
    allowed = host_servers[0]
    netbox.write("hello.py", TLS_HELLO)
    # The matching name reaches the upstream (a plain HTTP server: it answers the TLS bytes with a 400).
    same = netbox.exec(f"python3 hello.py allowed.test {allowed} allowed.test", timeout_s=30).output
    assert "200" in same and "UPSTREAM" in same, same
    fronted = netbox.exec(f"python3 hello.py allowed.test {allowed} evil.example", timeout_s=30).output
    assert "200" in fronted and "CLOSED" in fronted, fronted


FORGED_HOST = r"""
import socket, sys
target = sys.argv[1]
s = socket.create_connection(("egress", 3128), timeout=10)
s.sendall(f"GET http://{target}/host HTTP/1.1\r\nHost: admin.internal:9999\r\nhost: other.test\r\n\r\n".encode())
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.split(b"\r\n\r\n", 1)[1].decode())
"""


def test_a_plain_http_request_reaches_the_checked_host_whatever_its_host_header_says(
    netbox, gw, host_servers
):
    """The proxy checks the request line's host; a Host header naming another (a virtual host behind the
    same address, an internal name) must not ride along: the upstream sees the checked host only."""
    allowed = host_servers[0]
    netbox.write("forged.py", FORGED_HOST)
    seen = netbox.exec(f"python3 forged.py {gw}:{allowed}", timeout_s=30).output.strip()
    assert seen == f"{gw}:{allowed}"
