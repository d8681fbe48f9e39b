"""How much of OpenCode 1.18.33's API Hangar serves, computed from the URLconf (hangar.opencode.urls) and
the vendored schema: every (path, method) of the schema is served, served with a fixed answer (listed
below with why), or left out (listed below with why). The test fails when the lists go stale: a route
served and also listed as left out, a left-out route without a reason, a served route the schema does
not have. `python -m tests.opencode.test_route_count` prints the figures (DJANGO_SETTINGS_MODULE set)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

SPEC = Path(__file__).resolve().parents[2] / "docs/reference/opencode-1.18.33-openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")

# Function views (async, not DRF) say their methods here; a new one must be added or the test fails.
FUNCTION_VIEWS = {
    "event_stream": {"get"},
    "global_event_stream": {"get"},
    "session_message": {"get", "post"},
    "session_command": {"post"},
}

# Served over a WebSocket (hangar.asgi), not the HTTP URLconf.
WEBSOCKETS = {("/pty/{}/connect", "get")}

# Served, but the answer is fixed: nothing of the kind runs beside a Hangar sandbox.
FIXED = {
    ("/provider/auth", "get"): "providers are set up in Hangar, not by OpenCode's auth flows",
    ("/experimental/capabilities", "get"): "no background subagents",
    ("/experimental/console", "get"): "no OpenCode Console org",
    ("/experimental/workspace", "get"): "OpenCode's remote workspaces: Hangar has its own per session",
    ("/experimental/workspace/status", "get"): "idem",
    ("/experimental/resource", "get"): "no MCP resources",
    ("/path", "get"): "one directory, the sandbox's /workspace",
    ("/project/{projectID}/directories", "get"): "one directory, the sandbox's /workspace",
}

# The TUI's part of issue 30 (helper `tui`), while it is not on main: counted as left out until served.
TUI_PART = "the TUI's part of issue 30 (shell, init, share, config writes), not served yet"

# Left out, and why. Keys are (path, method); a whole family may share one reason.
LEFT_OUT: dict[tuple[str, str], str] = {
    ("/auth/{providerID}", "put"): "credentials are set in Hangar's web app by a project admin, encrypted",
    ("/auth/{providerID}", "delete"): "idem",
    ("/log", "post"): "a client's log line has no place in a tenant's audit or logs",
    ("/experimental/control-plane/move-session", "post"): "sessions do not move between machines' dirs",
    ("/global/config", "get"): TUI_PART,
    ("/global/config", "patch"): TUI_PART,
    ("/global/dispose", "post"): "a client may not stop a shared server",
    ("/global/upgrade", "post"): "a client may not upgrade a shared server",
    ("/config", "patch"): TUI_PART,
    ("/experimental/console/orgs", "get"): "no OpenCode Console",
    ("/experimental/console/switch", "post"): "no OpenCode Console",
    ("/experimental/worktree", "get"): "worktrees: each Hangar session has its own workspace already",
    ("/experimental/worktree", "post"): "idem",
    ("/experimental/worktree", "delete"): "idem",
    ("/experimental/worktree/reset", "post"): "idem",
    ("/experimental/session", "get"): "the experimental session list: /session serves the same",
    ("/experimental/session/{sessionID}/background", "post"): "no background subagents",
    ("/instance/dispose", "post"): "a client may not stop a shared server",
    ("/vcs/apply", "post"): "applying a patch to the workspace outside a run: not built (needs a review)",
    ("/project/git/init", "post"): "a project's repository is set in Hangar, not by a client",
    ("/experimental/project/{projectID}/copy/generate-name", "post"): "project copies: not a Hangar idea",
    ("/experimental/project/{projectID}/copy", "post"): "idem",
    ("/experimental/project/{projectID}/copy", "delete"): "idem",
    ("/experimental/project/{projectID}/copy/refresh", "post"): "idem",
    ("/provider/{providerID}/oauth/authorize", "post"): "providers are set up in Hangar",
    ("/provider/{providerID}/oauth/callback", "post"): "providers are set up in Hangar",
    ("/session/{sessionID}/init", "post"): TUI_PART,
    ("/session/{sessionID}/share", "post"): TUI_PART,
    ("/session/{sessionID}/share", "delete"): TUI_PART,
    ("/session/{sessionID}/shell", "post"): TUI_PART,
    ("/sync/start", "post"): "OpenCode's multi-machine sync: Postgres is Hangar's one store",
    ("/sync/replay", "post"): "idem",
    ("/sync/steal", "post"): "idem",
    ("/sync/history", "post"): "idem",
    ("/experimental/workspace/adapter", "get"): "OpenCode's remote workspaces",
    ("/experimental/workspace", "post"): "idem",
    ("/experimental/workspace/sync-list", "post"): "idem",
    ("/experimental/workspace/{id}", "delete"): "idem",
    ("/experimental/workspace/warp", "post"): "idem",
}


def _spelled_out(reasons: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """ "idem" is the reason above it, written out (the figures list routes sorted, not in this order)."""
    out, last = {}, ""
    for route, why in reasons.items():
        last = last if why == "idem" else why
        out[route] = last
    return out


LEFT_OUT = _spelled_out(LEFT_OUT)

# The TUI's remote control (/tui/*): a server driving the TUI's own screen; and OpenCode's newer /api/*
# surface, which its TUI does without (hangar.opencode README).
FAMILIES = {
    "/tui/": "remote control of a local TUI's screen: nothing for a hosted server to drive",
    "/api/": "OpenCode's newer /api/* surface: its TUI and SDK fall back to the routes served",
}


def schema_routes() -> set[tuple[str, str]]:
    spec = json.loads(SPEC.read_text())
    return {(path, m) for path, ops in spec["paths"].items() for m in ops if m in METHODS}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def served_routes() -> set[tuple[str, str]]:
    """(schema-style path with `{}` for parameters, method) of every route hangar.opencode.urls serves."""
    from hangar.opencode.urls import urlpatterns

    out = set()
    for pattern in urlpatterns:
        path = "/" + re.sub(r"<(?:\w+:)?\w+>", "{}", str(pattern.pattern))
        view = pattern.callback
        cls = getattr(view, "view_class", None) or getattr(view, "cls", None)
        if cls is not None:
            methods = {m for m in METHODS if callable(getattr(cls, m, None))}
        else:
            name = getattr(view, "__name__", "")
            assert name in FUNCTION_VIEWS, f"say which methods {name} serves in FUNCTION_VIEWS"
            assert inspect.iscoroutinefunction(view) or callable(view)
            methods = FUNCTION_VIEWS[name]
        out |= {(path, m) for m in methods}
    return out | WEBSOCKETS


def left_out_reason(route: tuple[str, str]) -> str | None:
    if route in LEFT_OUT:
        return LEFT_OUT[route]
    return next((why for prefix, why in FAMILIES.items() if route[0].startswith(prefix)), None)


def figures() -> dict:
    schema = schema_routes()
    by_shape = {(_shape(p), m): (p, m) for p, m in schema}
    served = {by_shape[r] for r in served_routes() if r in by_shape}
    fixed = {r for r in served if r in FIXED}
    missing = schema - served
    paths = {p for p, _ in schema}
    return {
        "schema_routes": len(schema),
        "schema_paths": len(paths),
        "served_routes": len(served),
        "served_paths": len({p for p, _ in served}),
        "served_with_fixed_answers": len(fixed),
        "left_out_routes": len(missing),
        "left_out_api_family": len([r for r in missing if r[0].startswith("/api/")]),
        "left_out_tui_family": len([r for r in missing if r[0].startswith("/tui/")]),
        "left_out": {f"{m.upper()} {p}": left_out_reason((p, m)) for p, m in sorted(missing)},
    }


def test_every_schema_route_is_served_or_left_out_with_a_reason():
    schema = schema_routes()
    by_shape = {(_shape(p), m): (p, m) for p, m in schema}
    served_shapes = served_routes()
    # A path the schema lacks is a mistake; an extra method on a schema path (a view class shared by
    # several paths) is simply not counted.
    paths = {shape for shape, _ in by_shape}
    unknown = {r for r in served_shapes if r[0] not in paths}
    assert not unknown, f"served but not in OpenCode 1.18.33's schema: {sorted(unknown)}"
    served = {by_shape[r] for r in served_shapes if r in by_shape}
    without_reason = [r for r in schema - served if not left_out_reason(r)]
    assert not without_reason, f"left out without a reason: {sorted(without_reason)}"
    stale = sorted(r for r in served if r in LEFT_OUT and LEFT_OUT[r] != TUI_PART)
    assert not stale, f"served, yet listed as left out: {stale}"
    assert all(r in schema for r in FIXED), "a fixed answer names a route the schema lacks"
    assert set(FIXED) <= served, f"fixed answers not served: {sorted(set(FIXED) - served)}"


@pytest.mark.parametrize(
    "route",
    [
        ("/global/health", "get"),
        ("/session/{sessionID}/message/{messageID}", "delete"),
        ("/session/{sessionID}/message/{messageID}/part/{partID}", "patch"),
        ("/vcs/diff/raw", "get"),
        ("/project/{projectID}", "patch"),
        ("/experimental/tool/ids", "get"),
        ("/pty/{ptyID}", "put"),
        ("/pty/{ptyID}/connect", "get"),
    ],
)
def test_the_routes_of_this_issue_are_served(route):
    assert (_shape(route[0]), route[1]) in served_routes()


if __name__ == "__main__":  # pragma: no cover - a figure printer
    import django

    django.setup()
    print(json.dumps(figures(), indent=1))
