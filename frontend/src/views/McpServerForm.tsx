// One MCP server of a project, added or edited (OpenCode's shape: hangar/mcp_config.py): a local server's
// command (one argument a line) and environment, or a remote server's URL and headers. A header value may
// name a project secret as {env:NAME}: it is stored as written and filled in by the worker when it calls the
// server, so the secret never reaches this page. The server's 400 names a field (`mcp.github.url`); its
// message is shown beside that field, with what was typed kept.
import { useId, useState } from "react";
import { fieldErrors } from "../api/client";

export type McpServerConfig = Record<string, unknown> & { type?: string };

// The fields this form edits; any other key a server has (a local server's cwd, an OAuth client secret) is
// kept as it is.
const EDITED = ["type", "command", "environment", "url", "headers", "enabled", "timeout", "oauth"];
const KEPT: Record<string, string[]> = { local: ["cwd"], remote: [] };

// A remote server's OAuth: not declared (OpenCode's default: tried when the server asks for it), declared
// (each member signs in: "Connect"), or off (headers only).
type Form = {
  name: string; type: string; command: string; environment: string; url: string; headers: string; timeout: string; enabled: boolean;
  oauth: "" | "member" | "off"; clientId: string; scope: string;
};

function initial(name: string, server: McpServerConfig | null): Form {
  const pairs = (value: unknown, sep: string) =>
    Object.entries((value ?? {}) as Record<string, string>).map(([k, v]) => `${k}${sep}${v}`).join("\n");
  return {
    name,
    type: server?.type === "local" ? "local" : "remote",
    command: ((server?.command as string[]) ?? []).join("\n"),
    environment: pairs(server?.environment, "="),
    url: String(server?.url ?? ""),
    headers: pairs(server?.headers, ": "),
    timeout: server?.timeout === undefined ? "" : String(server.timeout),
    enabled: server?.enabled !== false,
    oauth: server?.oauth === false ? "off" : oauthOf(server) ? "member" : "",
    clientId: String(oauthOf(server)?.clientId ?? ""),
    scope: String(oauthOf(server)?.scope ?? ""),
  };
}

function oauthOf(server: McpServerConfig | null): Record<string, unknown> | null {
  const oauth = server?.oauth;
  return oauth && typeof oauth === "object" ? (oauth as Record<string, unknown>) : null;
}

// "KEY<sep>value" lines as a mapping; the number of a line without the separator is an error.
function parsePairs(text: string, sep: string, what: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim()) continue;
    const at = line.indexOf(sep);
    if (at <= 0) return `Line ${i + 1} is not ${what}.`;
    out[line.slice(0, at).trim()] = line.slice(at + sep.length).trim();
  }
  return out;
}

// Which of the form's fields a server-side field name is about (`mcp.<name>.command[2]` -> command).
function fieldOf(key: string, name: string): string {
  const prefix = `mcp.${name}`;
  if (key === prefix) return "name";
  if (!key.startsWith(prefix + ".")) return "";
  const first = key.slice(prefix.length + 1).split(/[.[]/)[0];
  return EDITED.includes(first) ? first : "";
}

export function McpServerForm(props: {
  name: string;
  server: McpServerConfig | null;
  onSave: (name: string, config: McpServerConfig) => Promise<void>;
  onCancel: () => void;
}) {
  const [form, setForm] = useState<Form>(() => initial(props.name, props.server));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const id = useId();
  const set = (k: keyof Form) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>) =>
    setForm({ ...form, [k]: e.target.type === "checkbox" ? (e.target as HTMLInputElement).checked : e.target.value });

  // The server's config from the form, or the errors of lines that could not be read.
  const build = (): { config: McpServerConfig } | { errors: Record<string, string> } => {
    const kept = Object.fromEntries(
      Object.entries(props.server ?? {}).filter(([k]) => !EDITED.includes(k) && (KEPT[form.type] ?? []).includes(k)),
    );
    const config: McpServerConfig = { ...kept, type: form.type, enabled: form.enabled };
    if (form.timeout.trim()) config.timeout = Number(form.timeout);
    if (form.type === "local") {
      config.command = form.command.split("\n").map((a) => a.trim()).filter((a, i) => a || i > 0);
      const env = parsePairs(form.environment, "=", "NAME=value");
      if (typeof env === "string") return { errors: { environment: env } };
      if (Object.keys(env).length) config.environment = env;
    } else {
      config.url = form.url.trim();
      const headers = parsePairs(form.headers, ":", "Name: value");
      if (typeof headers === "string") return { errors: { headers } };
      if (Object.keys(headers).length) config.headers = headers;
      if (form.oauth === "off") config.oauth = false;
      if (form.oauth === "member") {
        const oauth: Record<string, unknown> = { ...oauthOf(props.server) };
        for (const [key, value] of [["clientId", form.clientId.trim()], ["scope", form.scope.trim()]]) {
          if (value) oauth[key] = value;
          else delete oauth[key];
        }
        config.oauth = oauth;
      }
    }
    return { config };
  };

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    const built = build();
    if ("errors" in built) {
      setErrors(built.errors);
      return;
    }
    setBusy(true);
    setErrors({});
    const name = form.name.trim();
    try {
      await props.onSave(name, built.config);
    } catch (err) {
      const mine: Record<string, string> = {};
      for (const [key, message] of Object.entries(fieldErrors(err))) {
        const field = fieldOf(key, name) || "form";
        mine[field] = mine[field] ? `${mine[field]} ${message}` : field === "form" ? `${key}: ${message}` : message;
      }
      setErrors(Object.keys(mine).length ? mine : { form: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };

  const problem = (field: string) =>
    errors[field] ? <p className="error small" id={`${id}-${field}`} role="alert">{errors[field]}</p> : null;
  const described = (field: string) => ({ "aria-invalid": !!errors[field], "aria-describedby": errors[field] ? `${id}-${field}` : undefined });
  const title = props.name ? `Edit MCP server ${props.name}` : "Add an MCP server";
  return (
    <form className="form mcpform" onSubmit={submit} aria-label={title}>
      <h3>{title}</h3>
      <div className="fieldgrid">
        <label>Name<input value={form.name} onChange={set("name")} required maxLength={64} className="mono" spellCheck={false} {...described("name")} /></label>
        <label>Type
          <select aria-label="Type" value={form.type} onChange={set("type")} {...described("type")}>
            <option value="remote">remote</option>
            <option value="local">local</option>
          </select>
        </label>
      </div>
      <p className="muted small">A remote server is called by Hangar's worker; a local one is a command run in the session's sandbox.</p>
      {problem("name")}
      {problem("type")}
      {form.type === "local" ? (
        <>
          <label>Command <span className="muted small">(one argument a line; the org's allow-list must match it)</span>
            <textarea className="mono" rows={3} value={form.command} onChange={set("command")} spellCheck={false} placeholder={"npx\n-y\n@modelcontextprotocol/server-time"} {...described("command")} />
          </label>
          {problem("command")}
          <label>Environment <span className="muted small">(NAME=value a line; scope a project secret to this server to pass one)</span>
            <textarea className="mono" rows={2} value={form.environment} onChange={set("environment")} spellCheck={false} {...described("environment")} />
          </label>
          {problem("environment")}
        </>
      ) : (
        <>
          <label>URL<input value={form.url} onChange={set("url")} className="mono" spellCheck={false} placeholder="https://mcp.example.com/mcp" inputMode="url" {...described("url")} /></label>
          {problem("url")}
          <label>Headers <span className="muted small">(Name: value a line; name a project secret as <code>{"{env:NAME}"}</code>, never its value)</span>
            <textarea className="mono" rows={2} value={form.headers} onChange={set("headers")} spellCheck={false} placeholder="Authorization: Bearer {env:GITHUB_TOKEN}" {...described("headers")} />
          </label>
          {problem("headers")}
          <div className="fieldgrid">
            <label>OAuth
              <select aria-label="OAuth" value={form.oauth} onChange={set("oauth")} {...described("oauth")}>
                <option value="">if the server asks</option>
                <option value="member">each member connects</option>
                <option value="off">off: headers only</option>
              </select>
            </label>
            {form.oauth === "member" && (
              <>
                <label>Client ID <span className="muted small">(empty: registered)</span>
                  <input value={form.clientId} onChange={set("clientId")} className="mono" spellCheck={false} />
                </label>
                <label>Scope<input value={form.scope} onChange={set("scope")} className="mono" spellCheck={false} /></label>
              </>
            )}
          </div>
          {problem("oauth")}
        </>
      )}
      <div className="fieldgrid">
        <label>Timeout (ms) <span className="muted small">(empty: the default)</span>
          <input type="number" min="1" value={form.timeout} onChange={set("timeout")} {...described("timeout")} />
        </label>
        <label className="check"><span><input type="checkbox" checked={form.enabled} onChange={set("enabled")} /> Enabled</span></label>
      </div>
      {problem("timeout")}
      {problem("enabled")}
      {problem("form")}
      <div className="row">
        <button type="submit" disabled={busy}>{busy ? "Saving…" : "Save server"}</button>
        <button type="button" className="ghost" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}
