// Single sign-on: the org's OpenID Connect provider (issuer, client, the email domains it answers for, the
// role of members it provisions). The client secret is write-only. A domain routes sign-ins only once
// proven: the page shows the DNS TXT record to publish and verifies it.
import { useEffect, useState } from "react";
import { api } from "../../api/client";
import { ErrorLine, useAction, useLoad } from "./common";

type Claim = { domain: string; verified: boolean; verified_by: string | null; txt_name: string; txt_value: string };
type Provider = { issuer: string; client_id: string; has_client_secret: boolean; domains: string[]; domain_claims: Claim[]; default_role: string; enabled: boolean };
type SsoOut = { provider: Provider | null; redirect_uri: string };

export function Sso({ org, admin }: { org: string; admin: boolean }) {
  const { data, error, reload } = useLoad<SsoOut>(`/api/orgs/${org}/sso`);
  const [busy, actionError, run] = useAction();
  const [form, setForm] = useState({ issuer: "", client_id: "", client_secret: "", domains: "", default_role: "member", enabled: true });
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    const p = data?.provider;
    if (p) setForm({ issuer: p.issuer, client_id: p.client_id, client_secret: "", domains: p.domains.join(", "), default_role: p.default_role, enabled: p.enabled });
  }, [data]);
  const set = (k: string) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm({ ...form, [k]: e.target.type === "checkbox" ? (e.target as HTMLInputElement).checked : e.target.value });
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const body = {
      ...form,
      client_secret: form.client_secret || null,
      domains: form.domains.split(/[\s,]+/).filter(Boolean),
    };
    if (await run(() => api("PUT", `/api/orgs/${org}/sso`, body))) {
      setSaved(true);
      reload();
    }
  };
  return (
    <section className="card" aria-labelledby="sso-h">
      <h2 id="sso-h">Single sign-on (OpenID Connect)</h2>
      <ErrorLine error={error} />
      {data && (
        <p className="muted small">Redirect URI to register with the provider: <code>{data.redirect_uri}</code></p>
      )}
      {data && !data.provider && <p className="muted">No identity provider is set up.</p>}
      {data?.provider && (
        <p>
          {data.provider.enabled ? "Enabled" : "Disabled"} for {data.provider.domains.join(", ")}; new members join as{" "}
          <strong>{data.provider.default_role}</strong>.
        </p>
      )}
      {data?.provider && data.provider.domain_claims.length > 0 && (
        <div className="tablewrap">
        <table aria-label="Email domains">
          <thead><tr><th>Domain</th><th>Proof</th><th>DNS TXT record that proves it</th><th><span className="sr-only">Action</span></th></tr></thead>
          <tbody>
            {data.provider.domain_claims.map((c) => (
              <tr key={c.domain}>
                <td>{c.domain}</td>
                <td>{c.verified ? `Proven (${c.verified_by === "dns" ? "DNS" : "operator"})` : "Not proven: routes no sign-in"}</td>
                <td>{!c.verified && <><code>{c.txt_name}</code> TXT <code>{c.txt_value}</code></>}</td>
                <td>
                  {admin && !c.verified && (
                    <button type="button" className="secondary" disabled={busy}
                      onClick={() => run(() => api("POST", `/api/orgs/${org}/sso/domains/${encodeURIComponent(c.domain)}/verify`)).then((ok) => ok && reload())}>
                      Verify {c.domain}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      {admin && (
        <form className="form" onSubmit={save} aria-label="Identity provider">
          <label>Issuer URL<input value={form.issuer} onChange={set("issuer")} placeholder="https://login.example.com" required /></label>
          <label>Client ID<input value={form.client_id} onChange={set("client_id")} required /></label>
          <label>Client secret <span className="muted">{data?.provider?.has_client_secret ? "(stored; leave empty to keep)" : ""}</span>
            <input type="password" value={form.client_secret} onChange={set("client_secret")} autoComplete="new-password" />
          </label>
          <label>Email domains <span className="muted">(comma separated)</span>
            <input value={form.domains} onChange={set("domains")} placeholder="example.com" required />
          </label>
          <label>Role of new members
            <select value={form.default_role} onChange={set("default_role")}>
              {["member", "viewer", "admin", "auditor"].map((r) => <option key={r}>{r}</option>)}
            </select>
          </label>
          <label className="check"><span><input type="checkbox" checked={form.enabled} onChange={set("enabled")} /> Enabled</span></label>
          <ErrorLine error={actionError} />
          {saved && <p className="banner ok" role="status">Saved.</p>}
          <button type="submit" disabled={busy}>Save identity provider</button>
        </form>
      )}
    </section>
  );
}
