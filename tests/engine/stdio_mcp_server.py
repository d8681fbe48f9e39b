"""A stdio MCP server in the standard library only (the sandbox image carries Python but not the `mcp`
SDK), for the local-server tests: copied into a session's workspace and named in the project's `mcp`
config as `python3 /workspace/.mcp/stdio_server.py`. It speaks newline-delimited JSON-RPC 2.0 as the MCP
stdio transport does: initialize, tools/list, tools/call, prompts/list, prompts/get, resources/list,
resources/read.

Tools: `whoami` (its pid, and whether the env var SCOPED_SECRET reached it), `crash` (exits mid-call),
`sleep` (seconds), `grow` (adds the tool `grown` and sends notifications/tools/list_changed before its
answer). Prompt: `greet` (argument `name`). Resource: `memo://today` (text). With ONLY_TOOLS=1 in its env it
advertises tools only; every method it is asked is appended to /tmp/stdio-mcp-methods (a test reads it)."""

import json
import os
import sys
import time

TOOLS = [
    {
        "name": "whoami",
        "description": "Who runs this server.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "crash",
        "description": "Exit while answering.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "sleep",
        "description": "Sleep, then answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
            "required": ["seconds"],
        },
    },
]


GROWN = {
    "name": "grown",
    "description": "A tool added while the server ran.",
    "inputSchema": {"type": "object", "properties": {}},
}
TOOLS.append(
    {
        "name": "grow",
        "description": "Add the tool grown.",
        "inputSchema": {"type": "object", "properties": {}},
    }
)
PROMPTS = [
    {
        "name": "greet",
        "description": "Greet someone.",
        "arguments": [{"name": "name", "description": "Who", "required": True}],
    }
]
RESOURCES = [{"name": "today", "uri": "memo://today", "mimeType": "text/plain"}]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(rid, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(name, arguments):
    if name == "whoami":
        return text(f"pid={os.getpid()} uid={os.getuid()} secret={'SCOPED_SECRET' in os.environ}")
    if name == "crash":
        os._exit(4)
    if name == "grow":
        if GROWN not in TOOLS:
            TOOLS.append(GROWN)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return text("grew a tool")
    if name == "grown":
        return text("the local grown tool answered")
    if name == "sleep":
        time.sleep(float(arguments.get("seconds", 0)))  # a slow tool, on purpose
        return text("slept")
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


ONLY_TOOLS = os.environ.get("ONLY_TOOLS") == "1"

for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    with open("/tmp/stdio-mcp-methods", "a") as asked:
        asked.write(f"{method}\n")
    if rid is None:
        continue  # a notification
    if method == "initialize":
        answer(
            rid,
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": True}}
                if ONLY_TOOLS
                else {"tools": {"listChanged": True}, "prompts": {}, "resources": {}},
                "serverInfo": {"name": "stdio-test", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(rid, {"tools": TOOLS})
    elif method == "tools/call":
        params = message.get("params") or {}
        answer(rid, call(params.get("name"), params.get("arguments") or {}))
    elif method == "prompts/list":
        answer(rid, {"prompts": PROMPTS})
    elif method == "prompts/get":
        who = ((message.get("params") or {}).get("arguments") or {}).get("name", "nobody")
        answer(
            rid, {"messages": [{"role": "user", "content": {"type": "text", "text": f"Say hello to {who}."}}]}
        )
    elif method == "resources/list":
        answer(rid, {"resources": RESOURCES})
    elif method == "resources/read":
        text = "MEMO-RESOURCE-CONTENT: buy milk"
        answer(rid, {"contents": [{"uri": "memo://today", "mimeType": "text/plain", "text": text}]})
    else:
        sys.stdout.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
            )
            + "\n"
        )
        sys.stdout.flush()
