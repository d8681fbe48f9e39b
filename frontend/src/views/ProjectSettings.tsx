// A project's settings: everything the project API can change (name, default model and agent, setup
// script, sandbox limits, network policy and egress, permission rules, agents, env vars, repository), in
// sections that each save on their own. A 400 names the field; what was typed stays in the form. Secret
// env vars carry a scope (which processes get them); the cached environments show what each takes on disk.
import { useEffect, useState } from "react";
import {
  api,
  get,
  projectPath,
  type Credential,
  type Me,
  type Member,
  type Project,
} from "../api/client";
import { Link, navigate } from "../router";
import { RepositoryForm } from "./console/Repositories";
import { McpServers } from "./McpServers";
import { Environments } from "./ProjectEnvironments";
import { EnvVars } from "./ProjectEnvVars";
import { AgentsEditor, HostsEditor, RulesEditor, type AgentFields, type Rule } from "./editors";

export function ProjectSettings({ org, project, me }: { org: string; project: number; me: Me }) {
  const [info, setInfo] = useState<Project | null>(null);
  const [error, setError] = useState("");
  const [models, setModels] = useState<string[]>([]);
  const role = me.orgs.find((m) => m.org === org)?.role;
  const admin = role === "owner" || role === "admin";
  const load = () => get<Project>(projectPath(org, project)).then(setInfo).catch((e) => setError((e as Error).message));
  useEffect(() => {
    void load();
    get<Credential[]>(`/api/orgs/${org}/credentials/`)
      .then((creds) => setModels([...new Set(creds.flatMap((c) => c.models.map((m) => `${c.provider}/${m}`)))]))
      .catch(() => setModels([]));
  }, [org, project]);
  if (error) return <p className="error center" role="alert">{error}</p>;
  if (!info) return <p className="muted center" role="status">Loading…</p>;
  const saved = (p: Project) => setInfo(p);
  return (
    <div className="page projectsettings">
      <p className="small"><Link to={`/o/${org}/p/${project}`}>← {info.name}</Link></p>
      <h1>Project settings</h1>
      {!admin && <p className="banner warn" role="status">Only an org admin or owner changes a project's settings; you can read them.</p>}
      <fieldset disabled={!admin} className="plain">
        <General org={org} project={info} models={models} onSaved={saved} />
        <Limits org={org} project={info} onSaved={saved} />
        <Network org={org} project={info} onSaved={saved} />
        <SetupNetwork org={org} project={info} onSaved={saved} />
        <Rules org={org} project={info} onSaved={saved} />
        <Headless org={org} project={info} onSaved={saved} />
        <Agents org={org} project={info} onSaved={saved} />
        <EnvVars org={org} project={info} admin={admin} />
      </fieldset>
      <McpServers org={org} project={info} admin={admin} onSaved={saved} />
      <Environments org={org} project={info} admin={admin} />
      {admin && <RepositoryForm org={org} project={info} onSaved={load} />}
      {admin && <Danger org={org} project={info} />}
    </div>
  );
}

// What a section last loaded from the server, as one dependency: a section's form is reset when its own
// fields change there (its save, a reload), never by another section's save, which would drop what was
// typed here and not saved yet.
const stored = (...fields: unknown[]) => JSON.stringify(fields);

// One section's form: PATCH what `body()` gives; a 400 shows its message (field: reason) under the form.
function Section(props: {
  org: string;
  project: Project;
  title: string;
  id: string;
  body: () => Record<string, unknown> | null;
  onSaved: (p: Project) => void;
  invalid?: string;
  children: React.ReactNode;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [done, setDone] = useState(false);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setDone(false);
    const body = props.body();
    if (body === null || props.invalid) return;
    setBusy(true);
    setError("");
    try {
      props.onSaved(await api<Project>("PATCH", projectPath(props.org, props.project.id), body));
      setDone(true);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="card" aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      <form className="form" onSubmit={submit} aria-label={props.title} onChange={() => setDone(false)}>
        {props.children}
        {(props.invalid || error) && <p className="error" role="alert">{props.invalid || error}</p>}
        {done && <p className="banner ok" role="status">Saved.</p>}
        <div><button type="submit" disabled={busy || !!props.invalid}>{busy ? "Saving…" : `Save ${props.title.toLowerCase()}`}</button></div>
      </form>
    </section>
  );
}

function General({ org, project, models, onSaved }: { org: string; project: Project; models: string[]; onSaved: (p: Project) => void }) {
  const [form, setForm] = useState({ name: "", default_model: "", default_agent: "", setup_script: "" });
  useEffect(() => {
    setForm({ name: project.name, default_model: project.default_model, default_agent: project.default_agent, setup_script: project.setup_script });
  }, [project.id, stored(project.name, project.default_model, project.default_agent, project.setup_script)]);
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>) =>
    setForm({ ...form, [k]: e.target.value });
  const agents = [...new Set(["build", "plan", ...Object.keys(project.agents ?? {}), form.default_agent])];
  return (
    <Section org={org} project={project} title="General" id="general-h" body={() => form} onSaved={onSaved}>
      <label>Name<input value={form.name} onChange={set("name")} required maxLength={150} /></label>
      <label>Default model <span className="muted small">(provider/model; empty: the platform's default)</span>
        <input value={form.default_model} onChange={set("default_model")} list="project-models" placeholder="openai/gpt-4o-mini" spellCheck={false} />
        <datalist id="project-models">{models.map((m) => <option key={m} value={m} />)}</datalist>
      </label>
      <label>Default agent
        <select value={form.default_agent} onChange={set("default_agent")}>
          {agents.map((a) => <option key={a} value={a}>{a}</option>)}
        </select>
      </label>
      <label>Setup script <span className="muted small">(runs in the sandbox before the first step of a new workspace; what it leaves is kept per commit, below)</span>
        <textarea className="mono" rows={4} value={form.setup_script} onChange={set("setup_script")} spellCheck={false} />
      </label>
    </Section>
  );
}

const LIMITS = [
  ["sandbox_cpus", "CPUs", "0.1"],
  ["sandbox_memory_mb", "Memory (MB)", "1"],
  ["sandbox_pids", "Processes", "1"],
  ["sandbox_disk_mb", "Disk (MB)", "1"],
  ["command_timeout_s", "Command timeout (s)", "1"],
] as const;

function Limits({ org, project, onSaved }: { org: string; project: Project; onSaved: (p: Project) => void }) {
  const initial = () => ({
    sandbox_image: project.sandbox_image,
    ...Object.fromEntries(LIMITS.map(([k]) => [k, String(project[k])])),
    model_limits: JSON.stringify(project.model_limits, null, 2),
  }) as Record<string, string>;
  const [form, setForm] = useState<Record<string, string>>(initial);
  const [invalid, setInvalid] = useState("");
  useEffect(() => setForm(initial()), [project.id, stored(project.sandbox_image, project.model_limits, ...LIMITS.map(([k]) => project[k]))]);
  const body = () => {
    let model_limits: unknown;
    try {
      model_limits = JSON.parse(form.model_limits || "{}");
    } catch (err) {
      setInvalid(`model_limits: not valid JSON (${(err as Error).message})`);
      return null;
    }
    setInvalid("");
    return {
      sandbox_image: form.sandbox_image,
      ...Object.fromEntries(LIMITS.map(([k]) => [k, form[k] === "" ? null : Number(form[k])])),
      model_limits,
    };
  };
  return (
    <Section org={org} project={project} title="Sandbox limits" id="limits-h" body={body} onSaved={onSaved}>
      <label>Image <span className="muted small">(empty: the platform's image)</span>
        <input value={form.sandbox_image} onChange={(e) => setForm({ ...form, sandbox_image: e.target.value })} spellCheck={false} />
      </label>
      <div className="fieldgrid">
        {LIMITS.map(([k, label, step]) => (
          <label key={k}>{label}
            <input type="number" step={step} min="0" value={form[k]} onChange={(e) => setForm({ ...form, [k]: e.target.value })} />
          </label>
        ))}
      </div>
      <label>Model limits (JSON) <span className="muted small">{'{"provider/model": {"context": N, "output": N}}'}</span>
        <textarea className="mono rules short" value={form.model_limits} onChange={(e) => { setInvalid(""); setForm({ ...form, model_limits: e.target.value }); }} spellCheck={false} />
      </label>
      {invalid && <p className="error" role="alert">{invalid}</p>}
    </Section>
  );
}

function Network({ org, project, onSaved }: { org: string; project: Project; onSaved: (p: Project) => void }) {
  const [policy, setPolicy] = useState(project.network_policy);
  const [hosts, setHosts] = useState<string[]>(project.network_allowlist);
  const [invalid, setInvalid] = useState("");
  useEffect(() => {
    setPolicy(project.network_policy);
    setHosts(project.network_allowlist);
  }, [project.id, stored(project.network_policy, project.network_allowlist)]);
  return (
    <Section org={org} project={project} title="Network" id="network-h" invalid={invalid} onSaved={onSaved}
      body={() => ({ network_policy: policy, network_allowlist: hosts.map((h) => h.trim()).filter(Boolean) })}>
      <label>Network policy
        <select value={policy} onChange={(e) => setPolicy(e.target.value)}>
          <option value="none">none: no network in the sandbox</option>
          <option value="allowlist">allowlist: only the hosts below</option>
        </select>
      </label>
      <HostsEditor label="Egress allow-list" hosts={hosts} onChange={setHosts} onInvalid={setInvalid} />
      <p className="muted small">Private, loopback and metadata addresses are refused.</p>
    </Section>
  );
}

// Hosts open only while the setup script runs (package registries), closed again before the agent's first step.
function SetupNetwork({ org, project, onSaved }: { org: string; project: Project; onSaved: (p: Project) => void }) {
  const [hosts, setHosts] = useState<string[]>(project.setup_network_allowlist);
  const [invalid, setInvalid] = useState("");
  useEffect(() => setHosts(project.setup_network_allowlist), [project.id, stored(project.setup_network_allowlist)]);
  return (
    <Section org={org} project={project} title="Setup hosts" id="setup-hosts-h" invalid={invalid} onSaved={onSaved}
      body={() => ({ setup_network_allowlist: hosts.map((h) => h.trim()).filter(Boolean) })}>
      <p className="muted small">
        Hosts the setup script may reach (besides the egress allow-list above), e.g. <code>pypi.org</code> or{" "}
        <code>registry.npmjs.org</code>. The sandbox is back on the project's network policy before the first step.
      </p>
      <HostsEditor label="Setup allow-list" hosts={hosts} onChange={setHosts} onInvalid={setInvalid} />
    </Section>
  );
}

function Rules({ org, project, onSaved }: { org: string; project: Project; onSaved: (p: Project) => void }) {
  const [rules, setRules] = useState<Rule[]>(project.permission_rules as Rule[]);
  const [invalid, setInvalid] = useState("");
  useEffect(() => setRules(project.permission_rules as Rule[]), [project.id, stored(project.permission_rules)]);
  return (
    <Section org={org} project={project} title="Permission rules" id="rules-h" invalid={invalid} onSaved={onSaved}
      body={() => ({ permission_rules: rules })}>
      <p className="muted small">The project's rules, after the org's policy (its denies and asks are a floor); members' and sessions' rules may only narrow them.</p>
      <RulesEditor label="Rules" rules={rules} onChange={setRules} onInvalid={setInvalid} />
    </Section>
  );
}

// The headless ask policy (docs/permissions.md): per trigger, what an ask becomes when no one may be watching.
type HeadlessEntry = { mode: string; approvers?: number[]; expire_after_s?: number; rules?: Rule[]; reason?: string };
const TRIGGERS: [string, string, string][] = [
  ["web", "Web app", "ask"],
  ["api", "API and OpenCode clients", "ask"],
  ["slack", "Slack", "ask, expiring after an hour"],
  ["webhook", "Webhooks", "reject"],
  ["codehost", "Code host events", "reject"],
  ["schedule", "Schedules", "reject"],
];
const HEADLESS_MODES: [string, string][] = [
  ["ask", "ask: wait for someone who may answer"],
  ["reject", "reject: refuse, telling the model why"],
  ["route", "route: ask named approvers, then expire"],
  ["allow_listed", "allow-listed: approve what the rules allow, refuse the rest"],
];

function Headless({ org, project, onSaved }: { org: string; project: Project; onSaved: (p: Project) => void }) {
  const [policy, setPolicy] = useState<Record<string, HeadlessEntry>>({});
  const [members, setMembers] = useState<Member[]>([]);
  const [invalid, setInvalid] = useState("");
  useEffect(() => setPolicy((project.headless_policy ?? {}) as Record<string, HeadlessEntry>), [project.id, stored(project.headless_policy)]);
  useEffect(() => {
    get<Member[]>(`/api/orgs/${org}/members/`).then((all) => setMembers(all.filter((m) => ["owner", "admin", "member"].includes(m.role)))).catch(() => setMembers([]));
  }, [org]);
  const put = (trigger: string, entry: HeadlessEntry | null) => {
    const next = { ...policy };
    if (entry) next[trigger] = entry;
    else delete next[trigger];
    setPolicy(next);
  };
  return (
    <Section org={org} project={project} title="When no one is watching" id="headless-h" invalid={invalid} onSaved={onSaved}
      body={() => ({ headless_policy: policy })}>
      <p className="muted small">What an <code>ask</code> becomes, by what started the run. An expired ask is refused and the model is told; nothing waits forever.</p>
      {TRIGGERS.map(([trigger, label, fallback]) => {
        const entry = policy[trigger];
        const approvers = entry?.approvers ?? [];
        return (
          <fieldset key={trigger} className="editor" aria-label={`${label} asks`}>
            <legend>{label}</legend>
            <label>Mode
              <select aria-label={`${label} mode`} value={entry?.mode ?? ""} onChange={(e) => put(trigger, e.target.value ? { mode: e.target.value } : null)}>
                <option value="">default ({fallback})</option>
                {HEADLESS_MODES.map(([mode, text]) => <option key={mode} value={mode}>{text}</option>)}
              </select>
            </label>
            {entry && (entry.mode === "route" || entry.mode === "ask") && (
              <label>Expires after (seconds) <span className="muted small">{entry.mode === "ask" && (trigger === "web" || trigger === "api") ? "(empty: never)" : "(empty: 3600)"}</span>
                <input type="number" min="1" aria-label={`${label} expiry`} value={entry.expire_after_s ?? ""}
                  onChange={(e) => put(trigger, { ...entry, expire_after_s: e.target.value ? Number(e.target.value) : undefined })} />
              </label>
            )}
            {entry?.mode === "route" && (
              <fieldset className="plain" aria-label={`${label} approvers`}>
                <legend className="small">Approvers <span className="muted">(a Slack DM if linked, and the web app's notice)</span></legend>
                {members.map((m) => (
                  <label key={m.user} className="check">
                    <input type="checkbox" checked={approvers.includes(m.user)}
                      onChange={(e) => put(trigger, { ...entry, approvers: e.target.checked ? [...approvers, m.user] : approvers.filter((a) => a !== m.user) })} /> {m.email}
                  </label>
                ))}
              </fieldset>
            )}
            {entry?.mode === "allow_listed" && (
              <RulesEditor label={`${label} allow-list`} rules={entry.rules ?? []} onChange={(rules) => put(trigger, { ...entry, rules })} onInvalid={setInvalid} />
            )}
            {entry && (entry.mode === "reject" || entry.mode === "allow_listed") && (
              <label>Reason told to the model <span className="muted small">(empty: a default)</span>
                <input aria-label={`${label} reason`} value={entry.reason ?? ""} maxLength={1000} onChange={(e) => put(trigger, { ...entry, reason: e.target.value || undefined })} />
              </label>
            )}
          </fieldset>
        );
      })}
    </Section>
  );
}

function Agents({ org, project, onSaved }: { org: string; project: Project; onSaved: (p: Project) => void }) {
  const [agents, setAgents] = useState<Record<string, AgentFields>>(project.agents as Record<string, AgentFields>);
  const [invalid, setInvalid] = useState("");
  useEffect(() => setAgents(project.agents as Record<string, AgentFields>), [project.id, stored(project.agents)]);
  return (
    <Section org={org} project={project} title="Agents" id="agents-h" invalid={invalid} onSaved={onSaved}
      body={() => ({ agents })}>
      <p className="muted small">Agents a prompt can name and the task tool can start (OpenCode's <code>agent</code> config).</p>
      <AgentsEditor label="Project agents" agents={agents} onChange={setAgents} onInvalid={setInvalid} />
    </Section>
  );
}

function Danger({ org, project }: { org: string; project: Project }) {
  const [typed, setTyped] = useState("");
  const [error, setError] = useState("");
  const remove = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      await api("DELETE", projectPath(org, project.id));
      navigate(`/o/${org}`);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section className="card danger" aria-labelledby="danger-h">
      <h2 id="danger-h">Delete the project</h2>
      <form className="inline" onSubmit={remove} aria-label="Delete the project">
        <label className="grow">Type the project's name, {project.name}, to delete it with its sessions
          <input value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" />
        </label>
        <button type="submit" className="danger" disabled={typed !== project.name}>Delete project</button>
      </form>
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}
