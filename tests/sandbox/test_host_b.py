"""A second Docker engine as sandbox host B (deploy/hosts/hostb.sh: its own network namespace, data root,
socket and bridge), its sandboxes' agents reached from this namespace over the private link.

B's host service (this process, inside `host_b.active()`) creates a sandbox with B's engine and sandbox
root; the engine's side (`connect_session`: the registry's files, no Docker) drives it over the TCP
channel through the route to B's channel subnet and B's forward from its private interface. A sandbox
on B reaches neither another sandbox's agent nor either host; host A's sandboxes are as before.
"""

from __future__ import annotations

import ipaddress
import socket
import textwrap
import uuid

import docker.errors
import pytest
from docker.types import IPAMConfig, IPAMPool

from sandbox import channel, containers, registry, volumes
from sandbox.channel_client import connect_session
from sandbox.protocol import SandboxSpec
from tests.sandbox.conftest import TEST_LABEL
from tests.sandbox.hostb import PRIVATE_A, PRIVATE_B, host_b  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures(
    "tcp_transport"
)  # the agent channel over TCP (tests/sandbox/conftest.py)


def _spec(session_id: str) -> SandboxSpec:
    return SandboxSpec(session_id=session_id, memory_mb=256, pids=128, disk_mb=64)


@pytest.fixture(scope="module")
def b_sandboxes(host_b):  # noqa: F811
    return host_b.sandboxes(TEST_LABEL)


def _endpoint(session_id: str) -> tuple[str, int]:
    address, port, _ = registry.channel_endpoint(volumes.session_key(session_id))
    return address, port


def _probe(box, targets: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """From inside the sandbox (uid 1000): a TCP connection to each target; OPEN or the error's name."""
    script = textwrap.dedent(f"""\
        import socket
        for host, port in {targets!r}:
            try:
                socket.create_connection((host, port), timeout=3).close()
                print(host, port, "OPEN")
            except OSError as exc:
                print(host, port, type(exc).__name__)
        """)
    box.write("/tmp/probe.py", script)
    lines = box.exec("python3 /tmp/probe.py", timeout_s=60).output.split("\n")
    return {(h, int(p)): r for h, p, r in (line.split() for line in lines if line.strip())}


def test_a_sandbox_on_b_is_driven_from_this_namespace(host_b, b_sandboxes, new_session_id, docker_client):  # noqa: F811
    sid = new_session_id()
    with host_b.active():
        b_sandboxes.get_or_create(_spec(sid))
        address, _ = _endpoint(sid)
        assert ipaddress.ip_address(address) in ipaddress.ip_network("10.213.0.0/16"), address
        # The engine's side: the registry's files and the channel; no Docker socket is asked.
        box = connect_session(sid)
        assert box.connection.mode == "tcp"
        assert box.connection.sock.getpeername()[0] == address
        before = box.snapshot_track()
        box.write("/workspace/hello.py", "print('from host b')\n")
        result = box.exec("python3 hello.py && hostname", cwd="/workspace", timeout_s=30)
        assert result.exit_code == 0 and result.output.startswith("from host b\n"), result.output
        assert box.read("/workspace/hello.py").content.endswith("print('from host b')")
        after = box.snapshot_track()
        [diff] = box.snapshot_diff(before, after)
        assert (diff.path, diff.status, diff.additions) == ("hello.py", "added", 1)
        box.close()
    # It is B's container: host A's engine does not know it.
    name = containers.session_container_name(sid)
    assert host_b.client.api.inspect_container(name)["State"]["Running"]
    with pytest.raises(docker.errors.NotFound):
        docker_client.api.inspect_container(name)


def test_no_sandbox_on_b_reaches_another_agent_or_a_host(host_b, b_sandboxes, new_session_id):  # noqa: F811
    listener = socket.create_server(("0.0.0.0", 0))  # a service of host A on every interface
    a_port = listener.getsockname()[1]
    try:
        with host_b.active():
            one = b_sandboxes.get_or_create(_spec(new_session_id()))
            two = b_sandboxes.get_or_create(_spec(new_session_id()))
            two_agent = _endpoint(two.session_id)
            subnet = host_b.client.api.inspect_network(channel.network_name())["IPAM"]["Config"][0]["Subnet"]
            gateway = str(ipaddress.ip_network(subnet)[1])  # B's own address on the channel bridge
            seen = _probe(one, [two_agent, (gateway, 7070), (PRIVATE_B, 7070), (PRIVATE_A, a_port)])
            assert "OPEN" not in seen.values(), seen
            # ...while this namespace reaches both agents.
            assert connect_session(one.session_id).ping() and connect_session(two.session_id).ping()
    finally:
        listener.close()


def test_host_a_is_unaffected(host_b, b_sandboxes, sandboxes, new_session_id):  # noqa: F811
    with host_b.active():
        on_b = b_sandboxes.get_or_create(_spec(new_session_id()))
        b_agent = _endpoint(on_b.session_id)
    on_a = sandboxes.get_or_create(_spec(new_session_id()))  # this machine's engine and sandbox root
    assert on_a.connection.mode == "tcp"
    a_address, _ = _endpoint(on_a.session_id)
    assert ipaddress.ip_address(a_address) not in ipaddress.ip_network("10.213.0.0/16")
    assert on_a.exec("echo on a", timeout_s=30).output == "on a\n"
    assert connect_session(on_a.session_id).ping()
    # A's sandboxes do not reach B's agents (the private link forwards nothing from this namespace's
    # containers), nor B's private address.
    seen = _probe(on_a, [b_agent, (PRIVATE_B, 7070)])
    assert "OPEN" not in seen.values(), seen


def test_a_channel_subnet_taken_on_the_engine_is_skipped(host_b, tmp_path):  # noqa: F811
    """Sandbox roots sharing one engine (parallel test processes) take distinct subnets of the routed
    range: the first candidate of a root, held by another network, is passed over for the next."""
    with host_b.active():
        volumes.ROOT = tmp_path / "another-root"  # active() puts the root back
        api = host_b.client.api
        # Other test processes' channel networks may already hold some of this root's candidates: the
        # squatter takes the first free one, and the network is expected on the free one after it.
        taken = {c["Subnet"] for n in api.networks() for c in (n.get("IPAM") or {}).get("Config") or []}
        first, second = [s for s in channel.agent_subnets() if s not in taken][:2]
        squatter = api.create_network(
            f"hangar-squat-{uuid.uuid4().hex[:6]}",
            driver="bridge",
            internal=True,
            ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=first)]),
            labels=TEST_LABEL,
        )["Id"]
        name = None
        try:
            name = channel.ensure_network(api)
            info = api.inspect_network(name)
            assert info["IPAM"]["Config"][0]["Subnet"] == second
        finally:
            api.remove_network(squatter)
            if name is not None:
                bridge = f"br-{api.inspect_network(name)['Id'][:12]}"
                api.remove_network(name)
                for chain, rule in channel.host_rules(bridge, host_b.env["HANGAR_AGENT_PRIVATE_IFACE"]):
                    channel._iptables("-D", chain, *rule)
