"""sandbox.netguard: the one rule for where the platform may connect on a tenant's behalf (model endpoints,
outbound webhooks, repository hosts). A table of addresses and verdicts, with and without an operator's
allowance; then resolve/connect on a real socket, and the URL shape every caller shares."""

import socket
import threading

import pytest

from sandbox import netguard
from sandbox.agent import netpolicy

VERDICTS = [
    ("::ffff:169.254.169.254", "link-local"),  # the metadata address, IPv4-mapped
    ("169.254.169.254", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.100.100.200", "carrier-grade NAT"),  # Alibaba's metadata address
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("127.0.0.1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),
    ("fd00::1", "private"),
    ("fd00:ec2::254", "private"),  # AWS's IPv6 metadata address
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),
    ("10.0.0.5", "private"),
    ("172.17.0.1", "private"),
    ("192.168.1.1", "private"),
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("240.0.0.1", "private"),  # reserved (Python counts 240/4 as private too)
    ("64:ff9b::a00:1", "reserved"),  # NAT64 of 10.0.0.1
    ("2002:a00:1::1", "not globally routable"),  # 6to4 of 10.0.0.1
    ("192.88.99.1", "not globally routable"),  # 6to4 relay anycast
    ("1.1.1.1", None),
    ("8.8.8.8", None),
    ("2606:4700:4700::1111", None),
]


@pytest.mark.parametrize("address, verdict", VERDICTS)
def test_each_address_gets_its_verdict_when_nothing_is_allowed(address, verdict):
    assert netguard.refusal(address) == verdict


@pytest.mark.parametrize("address, verdict", VERDICTS)
def test_the_host_rule_refuses_everything_the_egress_proxy_rule_refuses(address, verdict):
    """The in-container proxy (sandbox/agent/netpolicy.py) with no operator ranges refuses a subset."""
    proxy_refuses = not netpolicy.address_ok(address.split("%")[0], [])
    assert not proxy_refuses or verdict is not None


def test_an_allowed_network_opens_exactly_what_it_lists():
    allowed = netguard.networks("127.0.0.0/8, fd00::/8")
    assert netguard.refusal("127.0.0.1", allowed) is None
    assert netguard.refusal("::ffff:127.0.0.1", allowed) is None
    assert netguard.refusal("fd00::1", allowed) is None
    assert netguard.refusal("169.254.169.254", allowed) == "link-local"
    assert netguard.refusal("10.0.0.5", netguard.networks(["10.0.0.0/8"])) is None


def test_the_boolean_settings_mean_every_address_or_none():
    assert netguard.networks(True) == netguard.EVERYWHERE
    assert all(netguard.refusal(a, netguard.networks(True)) is None for a, _ in VERDICTS)
    assert netguard.networks(False) == netguard.networks([]) == netguard.networks("") == ()


def test_resolve_checks_every_answer_and_names_the_refused_one():
    with pytest.raises(netguard.Refused, match=r"localhost:80 resolves to .* \(loopback\).*\(SETTING\)"):
        netguard.resolve("localhost", 80, setting="SETTING")
    infos = netguard.resolve("127.0.0.1", 80, netguard.networks("127.0.0.0/8"), setting="SETTING")
    assert {info[4][0] for info in infos} == {"127.0.0.1"}


def test_connect_reaches_the_checked_answer():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept()[0].sendall(b"hi"), daemon=True).start()
    infos = netguard.resolve("127.0.0.1", port, netguard.networks(["127.0.0.1/32"]), setting="S")
    with netguard.connect(infos, timeout=5) as sock:
        assert sock.getpeername() == ("127.0.0.1", port) and sock.recv(2) == b"hi"
    server.close()


@pytest.mark.parametrize(
    "url, error",
    [
        ("ftp://example.com/x", "The scheme must be https or http."),
        ("https://user:pw@example.com/x", "Credentials do not go in the URL."),
        ("https://example.com:99999/x", "The port is not a number between 0 and 65535."),
        ("https:///x", "The URL has no host."),
    ],
)
def test_a_url_names_what_is_wrong_with_it(url, error):
    with pytest.raises(ValueError) as caught:
        netguard.split_url(url)
    assert str(caught.value) == error


def test_a_url_gets_its_scheme_default_port():
    assert netguard.split_url("https://[::1]/v1")[1:] == ("::1", 443)
    assert netguard.split_url("http://example.com:8080/v1")[1:] == ("example.com", 8080)


def test_a_repository_host_is_allowed_by_cidr_as_well_as_by_the_old_boolean():
    from sandbox import gitops

    url = "http://127.0.0.1:9/acme/app.git"
    assert gitops.check_url(url, allow_private=True).addresses == ["127.0.0.1"]
    assert gitops.check_url(url, allow_private=["127.0.0.0/8"]).addresses == ["127.0.0.1"]
    with pytest.raises(gitops.GitError, match=r"127\.0\.0\.1 \(loopback\).*HANGAR_REPO_ALLOW_PRIVATE_HOSTS"):
        gitops.check_url(url, allow_private=["10.0.0.0/8"])


@pytest.mark.parametrize(
    "value, expected",
    [
        ("", []),
        ("0", []),
        ("false", []),
        ("1", True),
        ("yes", True),
        ("10.0.0.0/8, fd00::/8", ["10.0.0.0/8", "fd00::/8"]),
    ],
)
def test_an_allow_private_setting_reads_as_a_boolean_or_cidrs(monkeypatch, value, expected):
    from hangar.env import flag_or_csv

    monkeypatch.setenv("HANGAR_X_ALLOW_PRIVATE", value)
    assert flag_or_csv("HANGAR_X_ALLOW_PRIVATE") == expected
