// Budgets: a hard limit stops model calls, a soft one alerts once per period; an admin may override a hard
// limit for the rest of its period (audited).
import { useState } from "react";
import { post } from "../../api/client";
import { ErrorLine, money, useAction, useLoad } from "./common";

type Budget = {
  id: number; scope: string; project: number | null; member: number | null; period: string;
  hard_limit: number | null; soft_limit: number | null; override: { amount: number; period_start: string } | null;
};

export function Budgets({ org, admin }: { org: string; admin: boolean }) {
  const { data, error, reload } = useLoad<Budget[]>(`/api/orgs/${org}/budgets/`);
  const [busy, actionError, run] = useAction();
  const [form, setForm] = useState({ scope: "org", period: "month", hard_limit: "", soft_limit: "", project: "", member: "" });
  const set = (k: string) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => setForm({ ...form, [k]: e.target.value });
  const num = (v: string) => (v === "" ? null : Number(v));
  const create = (e: React.FormEvent) => {
    e.preventDefault();
    run(() =>
      post(`/api/orgs/${org}/budgets/`, {
        scope: form.scope, period: form.period, hard_limit: num(form.hard_limit), soft_limit: num(form.soft_limit),
        project: num(form.project), member: num(form.member),
      }),
    ).then((ok) => ok && reload());
  };
  const override = (b: Budget) => {
    const amount = prompt(`Allow how many US dollars more this ${b.period}?`, "10");
    if (amount === null) return;
    run(() => post(`/api/orgs/${org}/budgets/${b.id}/override`, { amount: Number(amount) })).then((ok) => ok && reload());
  };
  const target = (b: Budget) => (b.scope === "org" ? "organisation" : b.scope === "project" ? `project ${b.project}` : `member ${b.member}`);
  return (
    <section className="card" aria-labelledby="budgets-h">
      <h2 id="budgets-h">Budgets</h2>
      <ErrorLine error={error || actionError} />
      {data?.length === 0 && <p className="muted">No budgets: spend is not limited.</p>}
      {!!data?.length && (
        <div className="tablewrap" tabIndex={0}>
          <table>
            <thead><tr><th>Applies to</th><th>Period</th><th className="num">Hard</th><th className="num">Soft</th><th>Override</th>{admin && <th><span className="sr-only">Actions</span></th>}</tr></thead>
            <tbody>
              {data.map((b) => (
                <tr key={b.id}>
                  <td>{target(b)}</td><td>{b.period}</td>
                  <td className="num">{b.hard_limit === null ? "—" : money(b.hard_limit)}</td>
                  <td className="num">{b.soft_limit === null ? "—" : money(b.soft_limit)}</td>
                  <td>{b.override ? `+${money(b.override.amount)} from ${b.override.period_start}` : "—"}</td>
                  {admin && <td>{b.hard_limit !== null && <button className="ghost" onClick={() => override(b)} disabled={busy}>Override</button>}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {admin && (
        <form className="inline" onSubmit={create} aria-label="Set a budget">
          <label>Scope
            <select value={form.scope} onChange={set("scope")}>
              <option value="org">organisation</option><option value="project">project</option><option value="member">member</option>
            </select>
          </label>
          {form.scope === "project" && <label>Project id<input value={form.project} onChange={set("project")} size={5} /></label>}
          {form.scope === "member" && <label>User id<input value={form.member} onChange={set("member")} size={5} /></label>}
          <label>Period
            <select value={form.period} onChange={set("period")}><option value="month">month</option><option value="day">day</option></select>
          </label>
          <label>Hard limit ($)<input inputMode="decimal" value={form.hard_limit} onChange={set("hard_limit")} size={7} /></label>
          <label>Soft limit ($)<input inputMode="decimal" value={form.soft_limit} onChange={set("soft_limit")} size={7} /></label>
          <button type="submit" disabled={busy}>Set budget</button>
        </form>
      )}
    </section>
  );
}
