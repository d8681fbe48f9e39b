// Spend and tokens over a chosen range: a bar chart of cost by day (plain SVG), and the range grouped by
// day, member, project or model, with CSV export.
import { useState } from "react";
import { ErrorLine, money, useLoad } from "./common";

type Row = Record<string, string | number | null> & {
  cost: number; calls: number; input_tokens: number; output_tokens: number; estimated_calls: number;
};
type Report = { from: string; to: string; group_by: string; rows: Row[]; totals: Row };

const iso = (d: Date) => d.toISOString().slice(0, 10);
// Tokens of calls whose model server reported none (the bundled model, some local servers) were counted by
// Hangar at about four characters a token: such figures are marked as estimates, never passed off as reported.
const ESTIMATED = "Includes calls whose tokens the model server did not report: counted by Hangar, about four characters a token.";
function Tokens({ n, row }: { n: number; row: Row }) {
  if (!row.estimated_calls) return <>{n.toLocaleString()}</>;
  return <span title={ESTIMATED} aria-label={`about ${n.toLocaleString()} (estimated)`} data-estimated="true">≈ {n.toLocaleString()}</span>;
}
const GROUP_LABEL: Record<string, (r: Row) => string> = {
  day: (r) => String(r.day),
  member: (r) => String(r.member || (r.user_id ? `user ${r.user_id}` : "(integration)")),
  project: (r) => String(r.project || r.project_id || "—"),
  model: (r) => `${r.provider}/${r.model}`,
};

export function Usage({ org }: { org: string }) {
  const today = new Date();
  const [range, setRange] = useState({ from: iso(new Date(today.getTime() - 29 * 86400e3)), to: iso(today) });
  const [group, setGroup] = useState("member");
  const query = `from=${range.from}&to=${range.to}`;
  const byDay = useLoad<Report>(`/api/orgs/${org}/usage?${query}&group_by=day`);
  const grouped = useLoad<Report>(`/api/orgs/${org}/usage?${query}&group_by=${group}`);
  return (
    <section className="card" aria-labelledby="usage-h">
      <h2 id="usage-h">Usage</h2>
      <form className="inline" aria-label="Usage range" onSubmit={(e) => e.preventDefault()}>
        <label>From<input type="date" value={range.from} onChange={(e) => setRange({ ...range, from: e.target.value })} /></label>
        <label>To<input type="date" value={range.to} onChange={(e) => setRange({ ...range, to: e.target.value })} /></label>
        <label>Group by
          <select value={group} onChange={(e) => setGroup(e.target.value)}>
            {["day", "member", "project", "model"].map((g) => <option key={g}>{g}</option>)}
          </select>
        </label>
        <a className="navlink" href={`/api/orgs/${org}/usage/export.csv?${query}&group_by=${group}`}>Export CSV</a>
      </form>
      <ErrorLine error={byDay.error || grouped.error} />
      {byDay.data && (
        <>
          <div className="totals" aria-label="Totals">
            <div><span className="muted small">Spend</span><strong>{money(byDay.data.totals.cost)}</strong></div>
            <div><span className="muted small">Model calls</span><strong>{byDay.data.totals.calls}</strong></div>
            <div><span className="muted small">Input tokens</span><strong><Tokens n={byDay.data.totals.input_tokens} row={byDay.data.totals} /></strong></div>
            <div><span className="muted small">Output tokens</span><strong><Tokens n={byDay.data.totals.output_tokens} row={byDay.data.totals} /></strong></div>
          </div>
          {byDay.data.totals.estimated_calls > 0 && (
            <p className="muted small" data-testid="estimated-note">
              ≈ estimated: {byDay.data.totals.estimated_calls} of {byDay.data.totals.calls} calls reported no tokens; Hangar
              counted them at about four characters a token.
            </p>
          )}
          <DayChart report={byDay.data} />
        </>
      )}
      {grouped.data && (
        <div className="tablewrap" tabIndex={0}>
          <table aria-label={`Usage by ${group}`}>
            <thead><tr><th>{group}</th><th className="num">Spend</th><th className="num">Calls</th><th className="num">Errors</th><th className="num">Input</th><th className="num">Output</th></tr></thead>
            <tbody>
              {grouped.data.rows.map((r, i) => (
                <tr key={i}>
                  <td>{GROUP_LABEL[group](r)}</td><td className="num">{money(r.cost)}</td><td className="num">{r.calls}</td>
                  <td className="num">{String(r.errors ?? 0)}</td><td className="num"><Tokens n={r.input_tokens} row={r} /></td>
                  <td className="num"><Tokens n={r.output_tokens} row={r} /></td>
                </tr>
              ))}
              {grouped.data.rows.length === 0 && <tr><td colSpan={6} className="muted">No model calls in this range.</td></tr>}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

// Cost per day as bars, every day of the range present (days without calls are zero).
function DayChart({ report }: { report: Report }) {
  const cost = new Map(report.rows.map((r) => [String(r.day), r.cost]));
  const days: string[] = [];
  for (let d = new Date(report.from + "T00:00:00Z"); iso(d) <= report.to; d = new Date(d.getTime() + 86400e3)) days.push(iso(d));
  const max = Math.max(...days.map((d) => cost.get(d) ?? 0), 0);
  const width = 720, height = 180, pad = 28, bar = (width - pad * 2) / Math.max(days.length, 1);
  const y = (v: number) => height - pad - (max ? (v / max) * (height - pad * 2) : 0);
  return (
    <svg className="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`Spend per day, ${report.from} to ${report.to}, at most ${money(max)} a day`}>
      <line className="axis" x1={pad} x2={width - pad} y1={height - pad} y2={height - pad} />
      <text x={pad} y={pad - 10}>{money(max)}</text>
      {days.map((d, i) => {
        const v = cost.get(d) ?? 0;
        return (
          <rect key={d} className="bar" x={pad + i * bar + 1} width={Math.max(bar - 2, 1)} y={y(v)} height={height - pad - y(v)}>
            <title>{`${d}: ${money(v)}`}</title>
          </rect>
        );
      })}
      <text x={pad} y={height - 8}>{days[0]}</text>
      <text x={width - pad} y={height - 8} textAnchor="end">{days[days.length - 1]}</text>
    </svg>
  );
}
