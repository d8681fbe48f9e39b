"""MCP servers' tools offered to the model beside the built-in ones (issue 27, seed 000 §6).

- `servers.py` which servers a step gets: the project's and the workspace's `opencode.json`, each passing
  the org's allow-list (hangar.mcp_config), the disabled ones left out;
- `remote.py` a remote server (Streamable HTTP, else SSE) called from the worker with the official `mcp`
  SDK, through the private/loopback/metadata guard, its headers' `{env:NAME}` filled from project secrets
  here and nowhere else (never the sandbox); `held.py` keeps its sessions open between calls, per project;
- `local.py` a local (stdio) server, run in the session's sandbox by the in-container agent
  (sandbox/agent/mcpservers.py), reached through `Sandbox.mcp_request`;
- `services.py` what OpenCode's `/mcp` routes do (status, add, connect, disconnect);
- `tools.py` one `McpTool` per server tool, named `<server>_<tool>` with the server's JSON schema; a call
  asks the permission engine under its own name, is bounded like a built-in tool, metered and audited;
- `changes.py` each server's tools version, moved by `notifications/tools/list_changed`: the catalog lists
  a server's tools again only when it moved;
- `content.py` prompts and resources (list, get, read), local or remote (`remote_content.py`), bounded;
  `listings.py` the project's prompts and resources as its runs last listed them (for /command and
  /experimental/resource); `prompts.py` a prompt as a command; `resources.py` a resource attached to a
  prompt; `expand.py` the worker fetching both at the step's start;
- `errors.py` the one error a call raises (apart from the clients: the SDK is imported on first remote use);
- `status.py` each server's last known status (what OpenCode's `/mcp` answers), kept in the cache;
- `oauth.py` OAuth 2.1 per member (start, callback, forget, the member's status), `oauth_http.py` its HTTP
  exchanges through the guard on the SDK's pieces, `oauth_client.py` a server called with the run's member's
  tokens (refreshed when expired and on a 401, which `refusals.py` tells apart).
"""
