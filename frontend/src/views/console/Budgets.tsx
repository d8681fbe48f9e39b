// Budgets: a hard limit stops model calls, a soft one alerts once per period; an admin may override a hard
// limit for the rest of its period (audited). Projects and members are picked from lists and shown by
// name; a budget's limits are edited in its row, and deleting one asks in the row, not in a dialog.
import { useState } from "react";
import { api, post, type Member, type Project } from "../../api/client";
import { ErrorLine, money, useAction, useLoad } from "./common";

type Budget = {
  id: number; scope: string; project: number | null; member: number | null; period: string;
  hard_limit: number | null; soft_limit: number | null; override: { amount: number; period_start: string } | null;
};
type RowMode = { id: number; kind: "edit" | "override" | "delete" } | null;

const num = (v: string) => (v.trim() === "" ? null : Number(v));
const text = (n: number | null) => (n === null ? "" : String(n));

export function Budgets({ org, admin }: { org: string; admin: boolean }) {
  const { data, error, reload } = useLoad<Budget[]>(`/api/orgs/${org}/budgets/`);
  const projects = useLoad<Project[]>(`/api/orgs/${org}/projects/`);
  const members = useLoad<Member[]>(admin ? `/api/orgs/${org}/members/` : null);
  const [busy, actionError, run] = useAction();
  const [form, setForm] = useState({ scope: "org", period: "month", hard_limit: "", soft_limit: "", project: "", member: "" });
  const [mode, setMode] = useState<RowMode>(null);
  const [limits, setLimits] = useState({ hard_limit: "", soft_limit: "", amount: "10" });
  const [notice, setNotice] = useState("");
  const set = (k: string) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => setForm({ ...form, [k]: e.target.value });
  const done = (message: string) => (ok: boolean) => {
    if (!ok) return;
    setNotice(message);
    setMode(null);
    reload();
  };
  const create = (e: React.FormEvent) => {
    e.preventDefault();
    setNotice("");
    run(() =>
      post(`/api/orgs/${org}/budgets/`, {
        scope: form.scope, period: form.period, hard_limit: num(form.hard_limit), soft_limit: num(form.soft_limit),
        project: form.scope === "project" ? num(form.project) : null, member: form.scope === "member" ? num(form.member) : null,
      }),
    ).then(done("Budget set."));
  };
  const open = (b: Budget, kind: "edit" | "override" | "delete") => {
    setNotice("");
    setLimits({ hard_limit: text(b.hard_limit), soft_limit: text(b.soft_limit), amount: "10" });
    setMode({ id: b.id, kind });
  };
  const save = (b: Budget) => (e: React.FormEvent) => {
    e.preventDefault();
    if (mode?.kind === "edit") {
      run(() => api("PATCH", `/api/orgs/${org}/budgets/${b.id}`, { hard_limit: num(limits.hard_limit), soft_limit: num(limits.soft_limit) }))
        .then(done("Budget changed."));
    } else if (mode?.kind === "override") {
      run(() => post(`/api/orgs/${org}/budgets/${b.id}/override`, { amount: num(limits.amount) })).then(done("Override allowed."));
    } else {
      run(() => api("DELETE", `/api/orgs/${org}/budgets/${b.id}`)).then(done("Budget deleted."));
    }
  };
  const projectName = (id: number | null) => projects.data?.find((p) => p.id === id)?.name ?? `project #${id}`;
  const memberName = (id: number | null) => members.data?.find((m) => m.user === id)?.email ?? `member #${id}`;
  const target = (b: Budget) => (b.scope === "org" ? "the organisation" : b.scope === "project" ? projectName(b.project) : memberName(b.member));
  const rowForm = (b: Budget) => (
    <tr key={`${b.id}-form`} className="rowform">
      <td colSpan={6}>
        <form className="inline" onSubmit={save(b)} aria-label={`${mode?.kind === "edit" ? "Edit" : mode?.kind === "override" ? "Override" : "Delete"} the budget of ${target(b)}`}>
          {mode?.kind === "edit" && (
            <>
              <label>Hard limit ($)<input inputMode="decimal" value={limits.hard_limit} onChange={(e) => setLimits({ ...limits, hard_limit: e.target.value })} size={7} autoFocus /></label>
              <label>Soft limit ($)<input inputMode="decimal" value={limits.soft_limit} onChange={(e) => setLimits({ ...limits, soft_limit: e.target.value })} size={7} /></label>
              <button type="submit" disabled={busy}>Save limits</button>
            </>
          )}
          {mode?.kind === "override" && (
            <>
              <label>Allow this much more this {b.period} ($)<input inputMode="decimal" value={limits.amount} onChange={(e) => setLimits({ ...limits, amount: e.target.value })} size={7} autoFocus /></label>
              <button type="submit" disabled={busy}>Allow</button>
            </>
          )}
          {mode?.kind === "delete" && (
            <>
              <span>Delete the {b.period}ly budget of {target(b)}? Spend there is no longer limited.</span>
              <button type="submit" className="danger" disabled={busy} autoFocus>Delete budget</button>
            </>
          )}
          <button type="button" className="ghost" onClick={() => setMode(null)}>Cancel</button>
        </form>
      </td>
    </tr>
  );
  return (
    <section className="card" aria-labelledby="budgets-h">
      <h2 id="budgets-h">Budgets</h2>
      <ErrorLine error={error || actionError} />
      {notice && <p className="banner ok" role="status">{notice}</p>}
      {data?.length === 0 && <p className="muted">No budgets: spend is not limited.</p>}
      {!!data?.length && (
        <div className="tablewrap" tabIndex={0}>
          <table aria-label="Budgets">
            <thead><tr><th>Applies to</th><th>Period</th><th className="num">Hard</th><th className="num">Soft</th><th>Override</th>{admin && <th><span className="sr-only">Actions</span></th>}</tr></thead>
            <tbody>
              {data.flatMap((b) => [
                <tr key={b.id}>
                  <td>{target(b)}</td><td>{b.period}</td>
                  <td className="num">{b.hard_limit === null ? "—" : money(b.hard_limit)}</td>
                  <td className="num">{b.soft_limit === null ? "—" : money(b.soft_limit)}</td>
                  <td>{b.override ? `+${money(b.override.amount)} from ${b.override.period_start}` : "—"}</td>
                  {admin && (
                    <td>
                      <span className="rowbuttons">
                        <button className="ghost" onClick={() => open(b, "edit")} aria-label={`Edit the budget of ${target(b)}`}>Edit</button>
                        {b.hard_limit !== null && <button className="ghost" onClick={() => open(b, "override")} aria-label={`Override the budget of ${target(b)}`}>Override</button>}
                        <button className="ghost danger" onClick={() => open(b, "delete")} aria-label={`Delete the budget of ${target(b)}`}>Delete</button>
                      </span>
                    </td>
                  )}
                </tr>,
                ...(mode?.id === b.id ? [rowForm(b)] : []),
              ])}
            </tbody>
          </table>
        </div>
      )}
      {admin && (
        <form className="inline" onSubmit={create} aria-label="Set a budget">
          <label>Applies to
            <select value={form.scope} onChange={set("scope")} aria-label="Applies to">
              <option value="org">the organisation</option><option value="project">a project</option><option value="member">a member</option>
            </select>
          </label>
          {form.scope === "project" && (
            <label>Project
              <select value={form.project} onChange={set("project")} required aria-label="Project">
                <option value="">Choose a project…</option>
                {projects.data?.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
              </select>
            </label>
          )}
          {form.scope === "member" && (
            <label>Member
              <select value={form.member} onChange={set("member")} required aria-label="Member">
                <option value="">Choose a member…</option>
                {members.data?.map((m) => <option key={m.user} value={m.user}>{m.email}</option>)}
              </select>
            </label>
          )}
          <label>Period
            <select value={form.period} onChange={set("period")} aria-label="Period"><option value="month">month</option><option value="day">day</option></select>
          </label>
          <label>Hard limit ($)<input inputMode="decimal" value={form.hard_limit} onChange={set("hard_limit")} size={7} /></label>
          <label>Soft limit ($)<input inputMode="decimal" value={form.soft_limit} onChange={set("soft_limit")} size={7} /></label>
          <button type="submit" disabled={busy}>Set budget</button>
        </form>
      )}
    </section>
  );
}
