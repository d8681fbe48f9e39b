// A project's env vars: plain ones (the sandbox's env, every command) and write-only secrets with a scope
// (the setup script, command patterns, MCP servers): listed, set, scoped and deleted by admins.
import { useEffect, useState } from "react";
import { api, get, projectPath, type EnvVar, type Project, type SecretScope } from "../api/client";

export function EnvVars({ org, project, admin }: { org: string; project: Project; admin: boolean }) {
  const base = `${projectPath(org, project.id)}env/`;
  const [vars, setVars] = useState<EnvVar[] | null>(null);
  const [form, setForm] = useState({ name: "", value: "", secret: true });
  const [editing, setEditing] = useState("");
  const [error, setError] = useState("");
  const load = () => get<EnvVar[]>(base).then(setVars).catch((e) => setError((e as Error).message));
  useEffect(() => {
    void load();
  }, [base]);
  const set = async (e: React.FormEvent) => {
    e.preventDefault();
    setError("");
    try {
      await api("PUT", `${base}${encodeURIComponent(form.name)}`, { value: form.value, secret: form.secret });
      setForm({ name: "", value: "", secret: true });
      void load();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const remove = (name: string) =>
    api("DELETE", `${base}${encodeURIComponent(name)}`).then(load).catch((e) => setError((e as Error).message));
  return (
    <section className="card" aria-labelledby="env-h">
      <h2 id="env-h">Environment variables</h2>
      <p className="muted small">
        A plain variable is set in the sandbox's env, for every command. A secret is write-only and reaches only the processes its scope names, in
        their own env: the setup script, commands matching a pattern (every command of the line must match, e.g.{" "}
        <code>npm publish *</code>), or an MCP server. Its value is masked (***) in all output.
      </p>
      {vars?.length === 0 && <p className="muted">No variables.</p>}
      {!!vars?.length && (
        <div className="tablewrap" tabIndex={0}>
          <table aria-label="Environment variables">
            <thead><tr><th>Name</th><th>Value</th><th>Scope</th>{admin && <th><span className="sr-only">Actions</span></th>}</tr></thead>
            <tbody>
              {vars.map((v) => (
                <tr key={v.name}>
                  <td className="mono">{v.name}</td>
                  <td className="mono small">{v.secret ? <span className="badge">secret</span> : v.value}</td>
                  <td className="small">{v.secret ? scopeText(v.scope) : <span className="muted">every command</span>}</td>
                  {admin && (
                    <td className="actions">
                      {v.secret && <button type="button" className="ghost" onClick={() => setEditing(v.name)}>Scope</button>}
                      <button type="button" className="ghost danger" onClick={() => remove(v.name)}>Delete</button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {admin && editing && vars?.some((v) => v.name === editing) && (
        <ScopeForm
          key={editing}
          url={`${base}${encodeURIComponent(editing)}/scope`}
          name={editing}
          scope={vars.find((v) => v.name === editing)!.scope}
          onDone={() => {
            setEditing("");
            void load();
          }}
        />
      )}
      {admin && (
        <form className="inline" onSubmit={set} aria-label="Set a variable">
          <label>Name<input value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required className="mono" spellCheck={false} /></label>
          <label className="grow">Value<input value={form.value} onChange={(e) => setForm({ ...form, value: e.target.value })} type={form.secret ? "password" : "text"} autoComplete="off" /></label>
          <label className="check"><input type="checkbox" checked={form.secret} onChange={(e) => setForm({ ...form, secret: e.target.checked })} /> Secret</label>
          <button type="submit">Set variable</button>
        </form>
      )}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}

function scopeText(scope: SecretScope): string {
  const parts = [
    ...(scope.setup ? ["setup script"] : []),
    ...scope.commands.map((c) => `\`${c}\``),
    ...scope.mcp.map((m) => `MCP ${m}`),
  ];
  return parts.length ? parts.join(", ") : "nothing (unused)";
}

// A secret's scope: the setup script, command patterns (one a line), MCP servers (comma-separated).
function ScopeForm(props: { url: string; name: string; scope: SecretScope; onDone: () => void }) {
  const [setup, setSetup] = useState(props.scope.setup);
  const [commands, setCommands] = useState(props.scope.commands.join("\n"));
  const [mcp, setMcp] = useState(props.scope.mcp.join(", "));
  const [error, setError] = useState("");
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setError("");
    const scope = {
      setup,
      commands: commands.split("\n").map((c) => c.trim()).filter(Boolean),
      mcp: mcp.split(",").map((m) => m.trim()).filter(Boolean),
    };
    try {
      await api("PUT", props.url, { scope });
      props.onDone();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form className="form scopeform" onSubmit={save} aria-label={`Scope of ${props.name}`}>
      <h3>Scope of <span className="mono">{props.name}</span></h3>
      <label className="check"><input type="checkbox" checked={setup} onChange={(e) => setSetup(e.target.checked)} /> The setup script</label>
      <label>Commands (one bash pattern a line)
        <textarea value={commands} onChange={(e) => setCommands(e.target.value)} rows={3} className="mono" spellCheck={false} />
      </label>
      <label>MCP servers (comma-separated)
        <input value={mcp} onChange={(e) => setMcp(e.target.value)} className="mono" spellCheck={false} />
      </label>
      <div className="row">
        <button type="submit">Save scope</button>
        <button type="button" className="ghost" onClick={props.onDone}>Cancel</button>
      </div>
      {error && <p className="error" role="alert">{error}</p>}
    </form>
  );
}
