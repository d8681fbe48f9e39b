"""Remote MCP sessions are held open between calls (hangar.engine.mcp.held): one project's calls to a
server share one session, another project's get their own, and a session the server dropped is noticed
by a ping before its next use and replaced, so the call still succeeds. Against a real server of ours
(tests/engine/mcp_server.py, the official SDK), which counts the sessions opened on it."""

from __future__ import annotations

import threading

import pytest

from hangar.engine.mcp import held
from hangar.engine.mcp.tools import RemoteServer
from tests.engine.test_mcp_tools import TOKEN, McpServer

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def server():
    held.SESSIONS.close_all()
    server = McpServer()
    yield server
    held.SESSIONS.close_all()
    server.stop()


def add(client: RemoteServer) -> str:
    result = client.call_tool("add", {"a": 20, "b": 22}, threading.Event())
    return str(result["content"][0]["text"])


def test_a_projects_calls_share_one_session_and_another_projects_get_their_own(server):
    mine = RemoteServer("tools", server.url, HEADERS, 30.0, scope="1")
    assert [add(mine) for _ in range(3)] == ["sum is 42"] * 3
    assert {t["name"] for t in mine.list_tools()} >= {"add", "slow"}
    assert server.opens() == 1

    theirs = RemoteServer("tools", server.url, HEADERS, 30.0, scope="2")
    assert add(theirs) == "sum is 42"
    assert server.opens() == 2  # never the first project's session


def test_a_session_the_server_dropped_is_replaced_before_the_next_call(server, monkeypatch):
    client = RemoteServer("tools", server.url, HEADERS, 30.0, scope="1")
    assert add(client) == "sum is 42"
    server.stop()  # every session it held is gone with it
    restarted = McpServer(port=server.port)
    try:
        monkeypatch.setattr(held, "PING_AFTER_S", 0.0)  # the next use pings first
        assert add(client) == "sum is 42"
        assert restarted.opens() == 2  # the first server's session, then the new one
    finally:
        restarted.stop()
