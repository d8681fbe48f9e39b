// The org's permission policy (a layer of the merge and a floor: its denies and asks beat every rule
// below; docs/permissions.md), edited as rows or JSON with errors that name the bad item; the "what
// would happen" preview; and the caps on what a project may set.
import { useEffect, useState } from "react";
import { api, get, post, type Project } from "../../api/client";
import { HostsEditor, RulesEditor } from "../editors";
import { ErrorLine, type Rule, useAction, useLoad } from "./common";

type Preview = {
  action: string;
  permission: string;
  why: string;
  decided_by: { layer: string; index: number; rule: Rule } | null;
  matched: { layer: string; index: number; rule: Rule; applies: boolean }[];
};
type Caps = { caps: Record<string, unknown>; projects_over: { project: number; field: string; value: unknown }[] };

export function Policies({ org }: { org: string }) {
  return (
    <>
      <PolicyEditor org={org} />
      <ProjectRules org={org} />
      <ModelAllowList org={org} />
      <PreviewForm org={org} />
      <CapsEditor org={org} />
    </>
  );
}

function PolicyEditor({ org }: { org: string }) {
  const { data, error } = useLoad<{ rules: Rule[] }>(`/api/orgs/${org}/permission-policy`);
  const [rules, setRules] = useState<Rule[]>([]);
  const [saved, setSaved] = useState(false);
  const [busy, actionError, run] = useAction();
  const [invalid, setInvalid] = useState("");
  useEffect(() => {
    if (data) setRules(data.rules);
  }, [data]);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved(false);
    if (invalid) return;
    if (await run(() => api("PUT", `/api/orgs/${org}/permission-policy`, { rules }))) setSaved(true);
  };
  return (
    <section className="card" aria-labelledby="policy-h">
      <h2 id="policy-h">Organisation permission policy</h2>
      <p className="muted small">Rules of permission, pattern and action; an org deny wins over every project, agent and session rule.</p>
      <ErrorLine error={error} />
      <form className="form" onSubmit={save} aria-label="Organisation policy">
        <RulesEditor label="Rules" rules={rules} onChange={setRules} onInvalid={setInvalid} />
        <ErrorLine error={invalid || actionError} />
        {saved && <p className="banner ok" role="status">Policy saved.</p>}
        <div><button type="submit" disabled={busy || !!invalid}>Save policy</button></div>
      </form>
    </section>
  );
}

// A project's own rules and egress allow-list, each a JSON list; a 400 names the bad element
// (`permission_rules[1].action`, `network_allowlist[0]`).
function ProjectRules({ org }: { org: string }) {
  const { data: projects, error } = useLoad<Project[]>(`/api/orgs/${org}/projects/`);
  const [picked, setPicked] = useState("");
  const project = projects?.find((p) => String(p.id) === picked) ?? projects?.[0];
  const [rules, setRules] = useState<Rule[]>([]);
  const [allowlist, setAllowlist] = useState<string[]>([]);
  const [saved, setSaved] = useState(false);
  const [badRules, setBadRules] = useState("");
  const [badHosts, setBadHosts] = useState("");
  const invalid = badRules || badHosts;
  const [busy, actionError, run] = useAction();
  useEffect(() => {
    if (!project) return;
    setRules(project.permission_rules as Rule[]);
    setAllowlist(project.network_allowlist);
    setSaved(false);
  }, [project?.id]);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    if (!project || invalid) return;
    setSaved(false);
    const body = { permission_rules: rules, network_allowlist: allowlist.map((h) => h.trim()).filter(Boolean) };
    if (await run(() => api("PATCH", `/api/orgs/${org}/projects/${project.id}/`, body))) setSaved(true);
  };
  return (
    <section className="card" aria-labelledby="project-rules-h">
      <h2 id="project-rules-h">Project rules and egress</h2>
      <p className="muted small">The project's permission rules (narrowed, never widened, by sessions) and the hosts its sandboxes may reach when its network policy is "allowlist" (private, loopback and metadata addresses are refused).</p>
      <ErrorLine error={error} />
      {project && (
        <form className="form" onSubmit={save} aria-label="Project rules">
          <label>Project
            <select value={String(project.id)} onChange={(e) => setPicked(e.target.value)}>
              {projects?.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
            </select>
          </label>
          <RulesEditor label="Permission rules" rules={rules} onChange={setRules} onInvalid={setBadRules} />
          <HostsEditor label="Egress allow-list" hosts={allowlist} onChange={setAllowlist} onInvalid={setBadHosts} />
          <p className="muted small">Network policy: {project.network_policy} (changed on the project's settings page).</p>
          <ErrorLine error={invalid || actionError} />
          {saved && <p className="banner ok" role="status">Project rules saved.</p>}
          <div><button type="submit" disabled={busy || !!invalid}>Save project rules</button></div>
        </form>
      )}
    </section>
  );
}

function ModelAllowList({ org }: { org: string }) {
  const { data, error } = useLoad<{ models: string[] }>(`/api/orgs/${org}/model-allowlist`);
  const [text, setText] = useState("");
  const [saved, setSaved] = useState(false);
  const [busy, actionError, run] = useAction();
  useEffect(() => {
    if (data) setText(data.models.join("\n"));
  }, [data]);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const models = text.split("\n").map((m) => m.trim()).filter(Boolean);
    if (await run(() => api("PUT", `/api/orgs/${org}/model-allowlist`, { models }))) setSaved(true);
  };
  return (
    <section className="card" aria-labelledby="allowlist-h">
      <h2 id="allowlist-h">Model allow-list</h2>
      <p className="muted small">One "provider/model" (or a bare model id) per line; empty allows every model.</p>
      <ErrorLine error={error} />
      <form className="form" onSubmit={save} aria-label="Model allow-list">
        <label>Allowed models
          <textarea className="mono rules short" value={text} onChange={(e) => setText(e.target.value)} spellCheck={false} />
        </label>
        <ErrorLine error={actionError} />
        {saved && <p className="banner ok" role="status">Allow-list saved.</p>}
        <button type="submit" disabled={busy}>Save allow-list</button>
      </form>
    </section>
  );
}

function PreviewForm({ org }: { org: string }) {
  const [projects, setProjects] = useState<Project[]>([]);
  const [form, setForm] = useState({ agent: "build", tool: "bash", pattern: "", project: "" });
  const [result, setResult] = useState<Preview | null>(null);
  const [busy, error, run] = useAction();
  useEffect(() => {
    get<Project[]>(`/api/orgs/${org}/projects/`).then(setProjects).catch(() => setProjects([]));
  }, [org]);
  const set = (k: string) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => setForm({ ...form, [k]: e.target.value });
  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    run(async () => {
      setResult(
        await post<Preview>(`/api/orgs/${org}/permission-preview`, {
          agent: form.agent,
          tool: form.tool,
          pattern: form.pattern || "*",
          project: form.project ? Number(form.project) : null,
        }),
      );
    });
  };
  return (
    <section className="card" aria-labelledby="preview-h">
      <h2 id="preview-h">What would happen?</h2>
      <form className="inline" onSubmit={submit} aria-label="Permission preview">
        <label>Agent
          <select value={form.agent} onChange={set("agent")}>
            {["build", "plan", "general", "explore"].map((a) => <option key={a}>{a}</option>)}
          </select>
        </label>
        <label>Tool<input value={form.tool} onChange={set("tool")} required size={10} /></label>
        <label>Pattern<input value={form.pattern} onChange={set("pattern")} placeholder="git push origin main" /></label>
        <label>Project
          <select value={form.project} onChange={set("project")}>
            <option value="">(org only)</option>
            {projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <button type="submit" disabled={busy}>Preview</button>
      </form>
      <ErrorLine error={error} />
      {result && (
        <div className="decision" role="status" aria-label="Decision">
          <p>
            <strong className={result.action}>{result.action.toUpperCase()}</strong> — {result.why}
          </p>
          {result.decided_by && (
            <p className="small">
              Decided by the {result.decided_by.layer} rule #{result.decided_by.index + 1}:{" "}
              <code>{result.decided_by.rule.permission} {result.decided_by.rule.pattern} → {result.decided_by.rule.action}</code>
            </p>
          )}
          <details>
            <summary>{result.matched.length} matching rules</summary>
            <ul className="small">
              {result.matched.map((m, i) => (
                <li key={i}>
                  {m.layer} #{m.index + 1}: <code>{m.rule.permission} {m.rule.pattern} → {m.rule.action}</code>
                  {m.applies ? " (decides)" : ""}
                </li>
              ))}
            </ul>
          </details>
        </div>
      )}
    </section>
  );
}

function CapsEditor({ org }: { org: string }) {
  const { data, error, reload } = useLoad<Caps>(`/api/orgs/${org}/project-caps`);
  const [form, setForm] = useState({ sandbox_cpus: "", sandbox_memory_mb: "", sandbox_disk_mb: "", network_none_only: false });
  const [busy, actionError, run] = useAction();
  useEffect(() => {
    const c = data?.caps ?? {};
    const s = (v: unknown) => (v === undefined || v === null ? "" : String(v));
    setForm({
      sandbox_cpus: s(c.sandbox_cpus),
      sandbox_memory_mb: s(c.sandbox_memory_mb),
      sandbox_disk_mb: s(c.sandbox_disk_mb),
      network_none_only: JSON.stringify(c.network_policies) === JSON.stringify(["none"]),
    });
  }, [data]);
  const num = (v: string) => (v === "" ? null : Number(v));
  const save = (e: React.FormEvent) => {
    e.preventDefault();
    const caps: Record<string, unknown> = {};
    for (const k of ["sandbox_cpus", "sandbox_memory_mb", "sandbox_disk_mb"] as const) {
      if (num(form[k]) !== null) caps[k] = num(form[k]);
    }
    if (form.network_none_only) caps.network_policies = ["none"];
    run(() => api("PUT", `/api/orgs/${org}/project-caps`, { caps })).then((ok) => ok && reload());
  };
  const set = (k: string) => (e: React.ChangeEvent<HTMLInputElement>) =>
    setForm({ ...form, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  return (
    <section className="card" aria-labelledby="caps-h">
      <h2 id="caps-h">Caps on project settings</h2>
      <ErrorLine error={error} />
      <form className="inline" onSubmit={save} aria-label="Project caps">
        <label>Max CPUs<input inputMode="decimal" value={form.sandbox_cpus} onChange={set("sandbox_cpus")} size={6} /></label>
        <label>Max memory (MB)<input inputMode="numeric" value={form.sandbox_memory_mb} onChange={set("sandbox_memory_mb")} size={7} /></label>
        <label>Max disk (MB)<input inputMode="numeric" value={form.sandbox_disk_mb} onChange={set("sandbox_disk_mb")} size={7} /></label>
        <label className="check"><span><input type="checkbox" checked={form.network_none_only} onChange={set("network_none_only")} /> No network</span></label>
        <button type="submit" disabled={busy}>Save caps</button>
      </form>
      <ErrorLine error={actionError} />
      {!!data?.projects_over.length && (
        <p className="banner warn small" role="status">
          Over the caps now: {data.projects_over.map((o) => `project ${o.project} ${o.field}=${String(o.value)}`).join("; ")}
        </p>
      )}
    </section>
  );
}
