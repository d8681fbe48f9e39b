import { useEffect, useState } from "react";
import { api, get, post, type Credential, type Me, type Member, type Token, type TokenCreated } from "../api/client";
import { RulesEditor, type Rule } from "./editors";

export function Settings({ org, me }: { org: string; me: Me }) {
  const role = me.orgs.find((m) => m.org === org)?.role ?? "viewer";
  return (
    <div className="page">
      <h1>Organisation settings</h1>
      <Members org={org} canManage={role === "owner" || role === "admin"} />
      {role !== "auditor" && <MyRules org={org} />}
      <Tokens org={org} />
      <Credentials org={org} />
    </div>
  );
}

// The member layer of the permission merge (docs/permissions.md): the person's own rules, for the runs they
// start or prompt; they may only narrow what the org and project allow.
function MyRules({ org }: { org: string }) {
  const [rules, setRules] = useState<Rule[] | null>(null);
  const [invalid, setInvalid] = useState("");
  const [error, setError] = useState("");
  const [done, setDone] = useState(false);
  const path = `/api/orgs/${org}/me/permission-rules`;
  useEffect(() => {
    get<{ rules: Rule[] }>(path).then((r) => setRules(r.rules)).catch((e) => setError((e as Error).message));
  }, [path]);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    if (invalid || rules === null) return;
    setError("");
    setDone(false);
    try {
      setRules((await api<{ rules: Rule[] }>("PUT", path, { rules })).rules);
      setDone(true);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section className="card" aria-labelledby="myrules-h">
      <h2 id="myrules-h">My permission rules</h2>
      <p className="muted small">Your own rules for the runs you start or prompt in this org. They can only make the agent more careful: an <code>allow</code> here never loosens the org's or the project's rules.</p>
      {rules === null && !error && <p className="muted">Loading…</p>}
      {rules !== null && (
        <form className="form" onSubmit={save} aria-label="My permission rules" onChange={() => setDone(false)}>
          <RulesEditor label="My rules" rules={rules} onChange={(r) => { setDone(false); setRules(r); }} onInvalid={setInvalid} />
          {(invalid || error) && <p className="error" role="alert">{invalid || error}</p>}
          {done && <p className="banner ok" role="status">Saved.</p>}
          <div><button type="submit" disabled={!!invalid}>Save my rules</button></div>
        </form>
      )}
    </section>
  );
}

function useList<T>(path: string): [T[] | null, string, () => void] {
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState("");
  const load = () => get<T[]>(path).then(setItems).catch((e) => setError(e.message));
  useEffect(() => {
    load();
  }, [path]);
  return [items, error, load];
}

function Members({ org, canManage }: { org: string; canManage: boolean }) {
  const [members, error, load] = useList<Member>(`/api/orgs/${org}/members/`);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("member");
  const [err, setErr] = useState("");
  const act = (p: Promise<unknown>) => p.then(load).catch((e) => setErr(e.message));
  return (
    <section className="card" aria-labelledby="members-h">
      <h2 id="members-h">Members</h2>
      {(error || err) && <p className="error" role="alert">{error || err}</p>}
      {members === null && !error && <p className="muted">Loading…</p>}
      <table>
        <thead><tr><th>Email</th><th>Role</th><th><span className="sr-only">Actions</span></th></tr></thead>
        <tbody>
          {members?.map((m) => (
            <tr key={m.id}>
              <td>{m.email}</td>
              <td>
                {canManage ? (
                  <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => act(api("PATCH", `/api/orgs/${org}/members/${m.id}`, { role: e.target.value }))}>
                    {["owner", "admin", "member", "viewer"].map((r) => <option key={r}>{r}</option>)}
                  </select>
                ) : m.role}
              </td>
              <td>{canManage && <button className="ghost danger" onClick={() => act(api("DELETE", `/api/orgs/${org}/members/${m.id}`))}>Remove</button>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {canManage && (
        <form className="inline" onSubmit={(e) => { e.preventDefault(); act(post(`/api/orgs/${org}/members/`, { email, role, name: "" })); setEmail(""); }}>
          <label>Email<input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required /></label>
          <label>Role<select value={role} onChange={(e) => setRole(e.target.value)}>{["admin", "member", "viewer"].map((r) => <option key={r}>{r}</option>)}</select></label>
          <button type="submit">Add member</button>
        </form>
      )}
    </section>
  );
}

function Tokens({ org }: { org: string }) {
  const [tokens, error, load] = useList<Token>(`/api/orgs/${org}/tokens/`);
  const [name, setName] = useState("");
  const [created, setCreated] = useState<TokenCreated | null>(null);
  const [err, setErr] = useState("");
  return (
    <section className="card" aria-labelledby="tokens-h">
      <h2 id="tokens-h">API tokens</h2>
      {(error || err) && <p className="error" role="alert">{error || err}</p>}
      {created && (
        <div className="banner ok" role="status">
          <p>Copy the token now: it is shown only once.</p>
          <code className="secret" data-testid="new-token">{created.token}</code>
          <button className="ghost" onClick={() => setCreated(null)}>Done</button>
        </div>
      )}
      <table>
        <thead><tr><th>Name</th><th>Prefix</th><th>Last used</th><th><span className="sr-only">Actions</span></th></tr></thead>
        <tbody>
          {tokens?.filter((t) => !t.revoked_at).map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td><td className="mono">{t.prefix}…</td><td>{t.last_used_at ? new Date(t.last_used_at).toLocaleString() : "never"}</td>
              <td><button className="ghost danger" onClick={() => api("DELETE", `/api/orgs/${org}/tokens/${t.id}`).then(load).catch((e) => setErr(e.message))}>Revoke</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {tokens?.length === 0 && <p className="empty">No tokens.</p>}
      <form className="inline" onSubmit={(e) => { e.preventDefault(); post<TokenCreated>(`/api/orgs/${org}/tokens/`, { name }).then((t) => { setCreated(t); setName(""); load(); }).catch((e) => setErr(e.message)); }}>
        <label>Name<input value={name} onChange={(e) => setName(e.target.value)} required /></label>
        <button type="submit">Create token</button>
      </form>
    </section>
  );
}

function Credentials({ org }: { org: string }) {
  const [creds, error, load] = useList<Credential>(`/api/orgs/${org}/credentials/`);
  const [form, setForm] = useState({ provider: "", api_key: "", api_base: "", models: "" });
  const [err, setErr] = useState("");
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement>) => setForm({ ...form, [k]: e.target.value });
  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    const body = { provider: form.provider, scope: "org", api_key: form.api_key, api_base: form.api_base, models: form.models.split(",").map((s) => s.trim()).filter(Boolean) };
    post(`/api/orgs/${org}/credentials/`, body).then(() => { setForm({ provider: "", api_key: "", api_base: "", models: "" }); load(); }).catch((e) => setErr(e.message));
  };
  return (
    <section className="card" aria-labelledby="creds-h">
      <h2 id="creds-h">Provider credentials</h2>
      {(error || err) && <p className="error" role="alert">{error || err}</p>}
      <table>
        <thead><tr><th>Provider</th><th>Scope</th><th>Key</th><th>Base URL</th><th><span className="sr-only">Actions</span></th></tr></thead>
        <tbody>
          {creds?.map((c) => (
            <tr key={c.id}>
              <td>{c.provider}</td><td>{c.scope}</td>
              <td className="mono">{c.has_api_key ? `••••${c.api_key_hint}` : "none"}</td>
              <td className="mono small">{c.api_base}</td>
              <td><button className="ghost danger" onClick={() => api("DELETE", `/api/orgs/${org}/credentials/${c.id}`).then(load).catch((e) => setErr(e.message))}>Delete</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {creds?.length === 0 && <p className="empty">No credentials: sessions use the platform's default model.</p>}
      <form className="inline" onSubmit={submit}>
        <label>Provider<input value={form.provider} onChange={set("provider")} required placeholder="openai" /></label>
        <label>API key<input type="password" autoComplete="off" value={form.api_key} onChange={set("api_key")} /></label>
        <label>Base URL<input value={form.api_base} onChange={set("api_base")} placeholder="optional" /></label>
        <label>Models<input value={form.models} onChange={set("models")} placeholder="comma separated" /></label>
        <button type="submit">Save credential</button>
      </form>
    </section>
  );
}
