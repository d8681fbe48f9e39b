"""MCP server configuration in OpenCode's shape, checked, and the org's allow-list it must pass.

One validator for the three places a server is configured (issue 27): the org's allow-list
(`Org.mcp_policy`: which local commands and remote URLs may be used at all), the project's servers
(`Project.mcp`, what its sessions get) and the workspace's `opencode.json` `mcp` key (only servers the org
allows). Here because the store and the engine both use it and it needs nothing of either.

A server is `{type: "local", command: [...], environment: {...}, enabled, timeout}` or
`{type: "remote", url, headers: {...}, oauth, enabled, timeout}` (OpenCode 1.18.33's McpLocalConfig and
McpRemoteConfig). A header value may name a project secret as `{env:NAME}`: the worker fills it in when it
calls the server, so the secret is stored encrypted and never shown in the config (a literal value is
kept as written and shown to every member who reads the project).

Errors name the offending field (`mcp.<server>.url`), never print the value back.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # as a secret's MCP scope names one
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]{0,127})\}")
MAX_SERVERS = 20
MAX_ARGS = 64
MAX_TEXT = 2048
MAX_ENV = 64
MAX_TIMEOUT_MS = 600_000
MAX_PATTERNS = 100
LOCAL_KEYS = {"type", "command", "cwd", "environment", "enabled", "timeout"}
REMOTE_KEYS = {"type", "url", "enabled", "headers", "oauth", "timeout"}
OAUTH_KEYS = {"clientId", "clientSecret", "scope", "callbackPort", "redirectUri"}


class McpConfigError(ValueError):
    """Bad configuration: `field` names where (`mcp.time.command[0]`), the message says what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def _text(value: Any, field: str, *, empty: bool = False, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit or (not empty and not value):
        raise McpConfigError(
            field, f"Must be {'a' if empty else 'a non-empty'} string of at most {limit} characters."
        )
    if "\x00" in value or "\n" in value or "\r" in value:
        raise McpConfigError(field, "Must be a single line without NUL characters.")
    return value


def _strings(value: Any, field: str, keys: re.Pattern[str], what: str) -> dict[str, str]:
    if not isinstance(value, dict) or len(value) > MAX_ENV:
        raise McpConfigError(field, f"Must be a mapping of at most {MAX_ENV} {what}s to strings.")
    for key, item in value.items():
        if not isinstance(key, str) or not keys.match(key):
            raise McpConfigError(field, f"{what.capitalize()} names must match {keys.pattern}.")
        _text(item, f"{field}.{key}", empty=True)
    return dict(value)


def _common(server: dict[str, Any], field: str) -> None:
    if "enabled" in server and not isinstance(server["enabled"], bool):
        raise McpConfigError(f"{field}.enabled", "Must be true or false.")
    timeout = server.get("timeout")
    if "timeout" in server and (
        isinstance(timeout, bool) or not isinstance(timeout, int) or not 0 < timeout <= MAX_TIMEOUT_MS
    ):
        raise McpConfigError(f"{field}.timeout", f"Must be milliseconds between 1 and {MAX_TIMEOUT_MS}.")


def check_url(url: Any, field: str) -> str:
    """An http(s) URL with a host, no credentials in it (they go in headers). No network here: where it
    resolves is checked by the caller's guard (hangar.engine.mcp.remote)."""
    url = _text(url, field)
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise McpConfigError(field, "The scheme must be https or http.")
    if "@" in parts.netloc:
        raise McpConfigError(field, "Credentials do not go in the URL: put them in headers as {env:NAME}.")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise McpConfigError(field, "The port is not a number between 0 and 65535.") from None
    if not parts.hostname:
        raise McpConfigError(field, "The URL has no host.")
    return url


def _local(server: dict[str, Any], field: str) -> dict[str, Any]:
    command = server.get("command")
    if not isinstance(command, list) or not 0 < len(command) <= MAX_ARGS:
        raise McpConfigError(f"{field}.command", f"Must be a list of 1 to {MAX_ARGS} strings.")
    for index, arg in enumerate(command):
        _text(arg, f"{field}.command[{index}]", empty=index > 0)
    if "environment" in server:
        _strings(server["environment"], f"{field}.environment", ENV_NAME, "variable")
    if "cwd" in server:
        _text(server["cwd"], f"{field}.cwd")
    return server


def _remote(server: dict[str, Any], field: str) -> dict[str, Any]:
    check_url(server.get("url"), f"{field}.url")
    if "headers" in server:
        _strings(server["headers"], f"{field}.headers", HEADER_NAME, "header")
    oauth = server.get("oauth")
    if "oauth" in server and oauth is not False and (not isinstance(oauth, dict) or set(oauth) - OAUTH_KEYS):
        keys = ", ".join(sorted(OAUTH_KEYS))
        raise McpConfigError(f"{field}.oauth", f"Must be false or a mapping of {keys}.")
    return server


def clean_server(name: Any, server: Any, field: str = "mcp") -> dict[str, Any]:
    """One server's config, checked; returned as given (a copy)."""
    where = f"{field}.{name}"
    if not isinstance(name, str) or not NAME.match(name):
        raise McpConfigError(where, "A server name is 1-64 letters, digits, '_', '.' or '-'.")
    if not isinstance(server, dict):
        raise McpConfigError(where, "Must be a mapping with a type of local or remote.")
    kind = server.get("type")
    allowed = LOCAL_KEYS if kind == "local" else REMOTE_KEYS if kind == "remote" else None
    if allowed is None:
        raise McpConfigError(f"{where}.type", "Must be local or remote.")
    unknown = sorted(str(k) for k in server if k not in allowed)
    if unknown:
        raise McpConfigError(f"{where}.{unknown[0][:64]}", f"Not a field of a {kind} server.")
    _common(server, where)
    server = dict(server)
    return _local(server, where) if kind == "local" else _remote(server, where)


def clean_servers(value: Any, field: str = "mcp") -> dict[str, dict[str, Any]]:
    """A `{name: server}` mapping, every server checked (a McpConfigError names the first bad field)."""
    if not isinstance(value, dict) or len(value) > MAX_SERVERS:
        raise McpConfigError(field, f"Must be a mapping of at most {MAX_SERVERS} servers by name.")
    return {name: clean_server(name, server, field) for name, server in value.items()}


def _patterns(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_PATTERNS:
        raise McpConfigError(field, f"Must be a list of at most {MAX_PATTERNS} patterns.")
    for index, pattern in enumerate(value):
        _text(pattern, f"{field}[{index}]")
    return list(value)


def clean_policy(value: Any, field: str = "mcp_policy") -> dict[str, list[str]]:
    """The org's allow-list: `{"local": [command patterns], "remote": [URL patterns]}`; `*` matches any
    run of characters. A local command is matched as its words joined by single spaces. Absent lists are
    empty: nothing of that kind is allowed."""
    if not isinstance(value, dict) or set(value) - {"local", "remote"}:
        raise McpConfigError(field, 'Must be a mapping with "local" and "remote" lists of patterns.')
    return {kind: _patterns(value.get(kind, []), f"{field}.{kind}") for kind in ("local", "remote")}


def _match(pattern: str, value: str) -> bool:
    regex = "".join(".*" if ch == "*" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


def refusal(server: dict[str, Any], policy: dict[str, Any] | None) -> str | None:
    """Why the org's allow-list refuses `server` (None: it is allowed)."""
    policy = policy or {}
    if server.get("type") == "local":
        command = " ".join(server.get("command") or [])
        if any(_match(p, command) for p in policy.get("local") or []):
            return None
        return "This local command is not in the org's MCP allow-list."
    url = str(server.get("url", ""))
    if any(_match(p, url) for p in policy.get("remote") or []):
        return None
    return "This URL is not in the org's MCP allow-list."


def check_allowed(
    servers: dict[str, dict[str, Any]], policy: dict[str, Any] | None, field: str = "mcp"
) -> None:
    """A McpConfigError naming the first server the org does not allow."""
    for name, server in servers.items():
        reason = refusal(server, policy)
        if reason:
            key = "command" if server.get("type") == "local" else "url"
            raise McpConfigError(f"{field}.{name}.{key}", reason)


def env_refs(server: dict[str, Any]) -> set[str]:
    """The `{env:NAME}` names a remote server's headers refer to."""
    return {m for value in (server.get("headers") or {}).values() for m in ENV_REF.findall(value)}


def fill_headers(headers: dict[str, str], env: dict[str, str]) -> dict[str, str]:
    """Headers with every `{env:NAME}` replaced by `env[NAME]` (an unknown name becomes empty)."""
    return {key: ENV_REF.sub(lambda m: env.get(m.group(1), ""), value) for key, value in headers.items()}
