"""Fixtures for tests of an org's single sign-on (imported by the conftest of each test folder that uses
them): an OpenID provider of our own on a random port, and a DNS server for the domain proof."""

import pytest

from tests.console.dns_server import LocalDns
from tests.oidc_idp.hostile import HostileIdp, discovery_with


@pytest.fixture
def provider_server():
    server = HostileIdp(discovery_with())
    yield server
    server.stop()


@pytest.fixture
def dns(settings):
    server = LocalDns()
    settings.HANGAR_SSO_DNS_NAMESERVERS = [server.address]
    yield server
    server.stop()
