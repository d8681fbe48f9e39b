// A project's MCP servers (its `mcp` field): each one's status for the member looking, a "Connect" for a
// server that wants the member to authorize Hangar (OAuth: the browser goes to the authorization server,
// whose answer comes back through Hangar's callback to this page with `?mcp=<name>`), "Disconnect", and for
// admins add, edit, remove, enable and disable (a PATCH of the whole `mcp` mapping; a 400 names the field).
// Header values that name a project secret ({env:NAME}) are shown as written: the page never sees a secret.
import { useCallback, useEffect, useRef, useState } from "react";
import { api, ApiError, get, post, projectPath, type Project } from "../api/client";
import { McpServerForm, type McpServerConfig } from "./McpServerForm";

type McpStatus = { status: string; error?: string };

const STATUS_TEXT: Record<string, string> = {
  connected: "connected",
  disabled: "disabled",
  failed: "failed",
  needs_auth: "needs authorization",
  needs_client_registration: "needs client registration",
};

// What came back from an authorization round trip (`?mcp=<name>` on this page's URL), taken off the URL
// once read so a reload does not announce it again.
function takeReturned(): string {
  const params = new URLSearchParams(location.search);
  const name = params.get("mcp") ?? "";
  if (name) {
    params.delete("mcp");
    const rest = params.toString();
    history.replaceState(history.state, "", location.pathname + (rest ? `?${rest}` : "") + location.hash);
  }
  return name.slice(0, 64);
}

// A server the member may hold an OAuth grant for: remote and declaring OAuth, or not turning it off and
// without an Authorization header of its own (which a grant's token would stand in for).
function usesOAuth(server: McpServerConfig): boolean {
  if (server.type !== "remote" || server.oauth === false) return false;
  const headers = Object.keys((server.headers ?? {}) as Record<string, string>).map((h) => h.toLowerCase());
  return typeof server.oauth === "object" || !headers.includes("authorization");
}

export function McpServers({ org, project, admin, onSaved }: { org: string; project: Project; admin: boolean; onSaved: (p: Project) => void }) {
  const base = `${projectPath(org, project.id)}mcp/`;
  const servers = (project.mcp ?? {}) as Record<string, McpServerConfig>;
  const [statuses, setStatuses] = useState<Record<string, McpStatus> | null>(null);
  const [statusError, setStatusError] = useState("");
  const [error, setError] = useState("");
  const [editing, setEditing] = useState<string | null>(null); // "" adds a new one
  const [returned] = useState(takeReturned);
  const [busy, setBusy] = useState("");
  const loadStatus = useCallback(() => {
    get<Record<string, McpStatus>>(base)
      .then((s) => {
        setStatuses(s);
        setStatusError("");
      })
      .catch((e) => setStatusError(e instanceof ApiError && e.status === 404 ? "Status is not available." : (e as Error).message));
  }, [base]);
  useEffect(loadStatus, [loadStatus, project.updated_at]);
  const section = useRef<HTMLElement>(null);
  useEffect(() => {
    if (returned) section.current?.scrollIntoView({ block: "start" });
  }, [returned]);

  const save = async (mcp: Record<string, McpServerConfig>) => {
    onSaved(await api<Project>("PATCH", projectPath(org, project.id), { mcp }));
  };
  const act = async (label: string, fn: () => Promise<unknown>) => {
    setBusy(label);
    setError("");
    try {
      await fn();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy("");
      loadStatus();
    }
  };
  const without = (name: string) => Object.fromEntries(Object.entries(servers).filter(([n]) => n !== name));
  const remove = (name: string) => act(`remove ${name}`, () => save(without(name)));
  const toggle = (name: string) =>
    act(`toggle ${name}`, () => save({ ...servers, [name]: { ...servers[name], enabled: servers[name].enabled === false } }));
  const connect = (name: string) =>
    act(`connect ${name}`, async () => {
      const answer = await post<{ authorizationUrl: string; oauthState: string }>(`${base}${encodeURIComponent(name)}/auth`);
      const target = new URL(answer.authorizationUrl, location.href);
      if (target.protocol !== "https:" && target.protocol !== "http:") throw new Error("The authorization URL is not an http(s) URL.");
      location.assign(target.href);
    });
  const disconnect = (name: string) =>
    act(`disconnect ${name}`, () => api("DELETE", `${base}${encodeURIComponent(name)}/auth`));
  const saveForm = (previous: string) => async (name: string, config: McpServerConfig) => {
    // A rename keeps the server's place among the others.
    const entries = previous ? Object.entries(servers).map(([n, s]) => (n === previous ? [name, config] : [n, s])) : [...Object.entries(servers), [name, config]];
    await save(Object.fromEntries(entries));
    setEditing(null);
  };

  const names = Object.keys(servers);
  const returnedStatus = returned && statuses ? statuses[returned] : undefined;
  return (
    <section className="card" aria-labelledby="mcp-h" ref={section}>
      <h2 id="mcp-h">MCP servers</h2>
      <p className="muted small">
        Tools from these servers are offered to the project's sessions as <code>server_tool</code>. The org's MCP
        allow-list (admin console) decides which commands and URLs may be named here.
      </p>
      {returned && returnedStatus?.status === "connected" && <p className="banner ok" role="status">Connected to {returned}</p>}
      {returned && returnedStatus && returnedStatus.status !== "connected" && (
        <p className="banner warn" role="status">{returned} is not connected: {STATUS_TEXT[returnedStatus.status] ?? returnedStatus.status}{returnedStatus.error ? ` (${returnedStatus.error})` : ""}</p>
      )}
      {names.length === 0 && <p className="muted">No MCP servers.</p>}
      {names.length > 0 && (
        <div className="tablewrap" tabIndex={0} role="group" aria-label="MCP servers table">
          <table aria-label="MCP servers" className="mcptable">
            <thead><tr><th>Name</th><th>Server</th><th>Status</th><th><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {names.map((name) => {
                const server = servers[name];
                const shown = statuses?.[name];
                // Disabled is the project's config, the same for every member; the rest is the endpoint's.
                const status = server.enabled === false ? "disabled" : shown?.status ?? (statuses || statusError ? "unknown" : "");
                return (
                  <tr key={name} data-mcp-server={name}>
                    <td className="mono">{name}</td>
                    <td className="small"><Where server={server} /></td>
                    <td className="small" data-status={status}>
                      <span className={`badge mcp-${status}`}>{STATUS_TEXT[status] ?? (status || "…")}</span>
                      {shown?.error && <div className="muted mcperror">{shown.error.slice(0, 300)}</div>}
                    </td>
                    <td className="actions">
                      {status === "needs_auth" && (
                        <button type="button" onClick={() => connect(name)} disabled={!!busy} aria-label={`Connect ${name}`}>Connect</button>
                      )}
                      {status === "connected" && usesOAuth(server) && (
                        <button type="button" className="ghost" onClick={() => disconnect(name)} disabled={!!busy} aria-label={`Disconnect ${name}`}>Disconnect</button>
                      )}
                      {admin && (
                        <>
                          <button type="button" className="ghost" onClick={() => toggle(name)} disabled={!!busy} aria-label={`${server.enabled === false ? "Enable" : "Disable"} ${name}`}>
                            {server.enabled === false ? "Enable" : "Disable"}
                          </button>
                          <button type="button" className="ghost" onClick={() => setEditing(name)} aria-label={`Edit ${name}`}>Edit</button>
                          <button type="button" className="ghost danger" onClick={() => remove(name)} disabled={!!busy} aria-label={`Remove ${name}`}>Remove</button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {statusError && <p className="muted small">{statusError}</p>}
      {error && <p className="error" role="alert">{error}</p>}
      {admin && editing !== null && (
        <McpServerForm key={editing} name={editing} server={editing ? servers[editing] : null} onSave={saveForm(editing)} onCancel={() => setEditing(null)} />
      )}
      {admin && editing === null && (
        <div><button type="button" className="secondary" onClick={() => setEditing("")}>Add MCP server</button></div>
      )}
    </section>
  );
}

// What the server is: a local command, or a remote URL with its headers ({env:NAME} shown as the secret's
// name, as stored).
function Where({ server }: { server: McpServerConfig }) {
  if (server.type === "local") {
    return <><span className="badge">local</span> <code className="mcpwhere">{((server.command as string[]) ?? []).join(" ")}</code></>;
  }
  const headers = Object.entries((server.headers ?? {}) as Record<string, string>);
  return (
    <>
      <span className="badge">remote</span> <code className="mcpwhere">{String(server.url ?? "")}</code>
      {typeof server.oauth === "object" && <> <span className="badge">OAuth</span></>}
      {headers.map(([k, v]) => (
        <div key={k} className="mono mcpheader">{k}: <HeaderValue value={v} /></div>
      ))}
    </>
  );
}

function HeaderValue({ value }: { value: string }) {
  const pieces = value.split(/(\{env:[A-Za-z_][A-Za-z0-9_]*\})/);
  return (
    <>
      {pieces.map((piece, i) =>
        piece.startsWith("{env:") ? (
          <span key={i} className="badge secretref" title={`the project secret ${piece.slice(5, -1)}, filled in by the worker`}>{piece}</span>
        ) : (
          <span key={i}>{piece}</span>
        ),
      )}
    </>
  );
}
