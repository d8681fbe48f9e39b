// The audit log: newest first, filtered by action, actor, target and time; older pages by cursor; the same
// filters exported whole as CSV or JSON.
import { useEffect, useState } from "react";
import { get } from "../../api/client";
import { ErrorLine } from "./common";

type Row = {
  id: number; created_at: string; action: string; actor: { type: string; id: string; label: string };
  target: { type: string; id: string }; data: unknown; ip: string | null;
};
type Page = { results: Row[]; next_cursor: string | null };

export function Audit({ org }: { org: string }) {
  const [filters, setFilters] = useState({ action: "", actor: "", target_type: "", since: "", until: "" });
  const [applied, setApplied] = useState(filters);
  const [rows, setRows] = useState<Row[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState("");
  const query = Object.entries(applied).filter(([, v]) => v).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&");
  const load = (after: string | null) =>
    get<Page>(`/api/orgs/${org}/audit/?limit=50&${query}${after ? `&cursor=${encodeURIComponent(after)}` : ""}`)
      .then((page) => {
        setRows((old) => (after ? [...old, ...page.results] : page.results));
        setCursor(page.next_cursor);
        setError("");
      })
      .catch((e) => setError((e as Error).message));
  useEffect(() => {
    load(null);
  }, [org, query]);
  const set = (k: string) => (e: React.ChangeEvent<HTMLInputElement>) => setFilters({ ...filters, [k]: e.target.value });
  return (
    <section className="card" aria-labelledby="audit-h">
      <h2 id="audit-h">Audit log</h2>
      <form className="inline" aria-label="Audit filters" onSubmit={(e) => { e.preventDefault(); setApplied(filters); }}>
        <label>Action<input value={filters.action} onChange={set("action")} placeholder="member.add" size={14} /></label>
        <label>Actor<input value={filters.actor} onChange={set("actor")} placeholder="email or id" size={14} /></label>
        <label>Target type<input value={filters.target_type} onChange={set("target_type")} placeholder="accounts.membership" size={14} /></label>
        <label>Since<input type="date" value={filters.since} onChange={set("since")} /></label>
        <label>Until<input type="date" value={filters.until} onChange={set("until")} /></label>
        <button type="submit">Filter</button>
        <a className="navlink" href={`/api/orgs/${org}/audit/export.csv?${query}`}>CSV</a>
        <a className="navlink" href={`/api/orgs/${org}/audit/export.json?${query}`}>JSON</a>
      </form>
      <ErrorLine error={error} />
      <div className="tablewrap" tabIndex={0}>
        <table aria-label="Audit events">
          <thead><tr><th>When</th><th>Action</th><th>Actor</th><th>Target</th><th>Details</th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td className="muted small">{new Date(r.created_at).toLocaleString()}</td>
                <td><code>{r.action}</code></td>
                <td>{r.actor.label || `${r.actor.type} ${r.actor.id}`}</td>
                <td className="small">{r.target.type} {r.target.id}</td>
                <td><details><summary className="small">data</summary><pre>{JSON.stringify(r.data, null, 1)}</pre></details></td>
              </tr>
            ))}
            {rows.length === 0 && !error && <tr><td colSpan={5} className="muted">No events match.</td></tr>}
          </tbody>
        </table>
      </div>
      {cursor && <button className="secondary" onClick={() => load(cursor)}>Older events</button>}
    </section>
  );
}
