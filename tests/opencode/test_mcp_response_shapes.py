"""The member's MCP status map and the forgetting of their OAuth tokens answer exactly the shapes they
declare (tests.api.schema_check), against the real OAuth-protected MCP server of test_mcp_oauth: no
servers, a server waiting for the member's sign-in, connected, then forgotten."""

import pytest

from tests.api.schema_check import assert_conforms
from tests.opencode.test_mcp_oauth import authorize, configure, oauth_server, project_url  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_mcp_status_map_and_forget_conform(api, alice, oauth_server):  # noqa: F811
    assert assert_conforms(api(alice).get(project_url(alice)), "project_mcp_status") == {}
    configure(alice, oauth_server)
    waiting = assert_conforms(api(alice).get(project_url(alice)), "project_mcp_status")
    assert waiting == {"tools": {"status": "needs_auth"}}
    assert authorize(api, alice).status_code == 302
    connected = assert_conforms(api(alice).get(project_url(alice)), "project_mcp_status")
    assert connected == {"tools": {"status": "connected"}}
    forgotten = api(alice).delete(project_url(alice, "tools/auth"))
    assert assert_conforms(forgotten, "project_mcp_auth_forget") == {"success": True}
    assert assert_conforms(api(alice).get(project_url(alice)), "project_mcp_status") == waiting
