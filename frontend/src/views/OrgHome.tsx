// The org's home: a prompt box that starts a session in a picked project (as peers open on), the org's
// recent sessions across projects, and the projects.
import { useEffect, useState } from "react";
import { get, post, projectPath, type Project, type ProjectIn, type Session } from "../api/client";
import { Link, navigate } from "../router";
import { ago } from "./ProjectPage";

export function OrgHome({ org }: { org: string }) {
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [recent, setRecent] = useState<Session[] | null>(null);
  const [error, setError] = useState("");
  const [creating, setCreating] = useState(false);

  useEffect(() => {
    setProjects(null);
    setRecent(null);
    get<Project[]>(`/api/orgs/${org}/projects/`)
      .then(setProjects)
      .catch((e) => setError(e.message));
    get<Session[]>(`/api/orgs/${org}/sessions/recent?limit=8`)
      .then(setRecent)
      .catch(() => setRecent([]));
  }, [org]);
  const name = (id: number) => projects?.find((p) => p.id === id)?.name ?? `project ${id}`;

  return (
    <div className="page home">
      {!!projects?.length && recent !== null && <StartSession org={org} projects={projects} preferred={recent[0]?.project} />}
      {/* Once the projects are in too: a row names its project ("project 202" until then, seen in CI). */}
      {!!recent?.length && projects !== null && (
        <section aria-labelledby="recent-h">
          <h2 id="recent-h">Recent sessions</h2>
          <ul className="recent">
            {recent.map((s) => (
              <li key={s.id}>
                <Link to={`/o/${org}/p/${s.project}/s/${s.id}`} className="recentrow">
                  <span className={`status status-${s.status.type}`} aria-label={`status ${s.status.type}`} />
                  <span className="title">{s.title || "Untitled"}</span>
                  <span className="muted small project">{name(s.project)}</span>
                  <time className="muted small" dateTime={new Date(s.time.updated).toISOString()}>{ago(s.time.updated)}</time>
                </Link>
              </li>
            ))}
          </ul>
        </section>
      )}
      <div className="pagehead">
        <h1>Projects</h1>
        <button onClick={() => setCreating((c) => !c)} aria-expanded={creating}>New project</button>
      </div>
      {creating && <CreateProject org={org} onCreated={(p) => navigate(`/o/${org}/p/${p.id}`)} />}
      {error && <p className="error" role="alert">{error}</p>}
      {projects === null && !error && <p className="muted" role="status">Loading projects…</p>}
      {projects?.length === 0 && !creating && <p className="empty">No projects yet. Create one to start a session.</p>}
      <ul className="cards">
        {projects?.map((p) => (
          <li key={p.id}>
            <Link to={`/o/${org}/p/${p.id}`} className="card projectcard">
              <strong>{p.name}</strong>
              <span className="muted">{p.default_model || "no default model"} · {p.default_agent || "build"}</span>
              {p.repo_url && <span className="muted small mono repo">{p.repo_url}</span>}
            </Link>
          </li>
        ))}
      </ul>
    </div>
  );
}

// Type what to do, pick the project (at first the one of the newest session), go: a new session of that
// project gets the prompt, and opens.
function StartSession({ org, projects, preferred }: { org: string; projects: Project[]; preferred?: number }) {
  const [project, setProject] = useState(String(projects.some((p) => p.id === preferred) ? preferred : projects[0].id));
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  useEffect(() => {
    if (!projects.some((p) => String(p.id) === project)) setProject(String(projects[0].id));
  }, [projects]);
  const start = async (e?: React.FormEvent) => {
    e?.preventDefault();
    if (!text.trim() || busy) return;
    setBusy(true);
    setError("");
    try {
      const base = `${projectPath(org, project)}sessions/`;
      const session = await post<Session>(base, {});
      await post(`${base}${encodeURIComponent(session.id)}/prompt/`, { parts: [{ type: "text", text }] });
      navigate(`/o/${org}/p/${project}/s/${session.id}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <form className="card startsession" onSubmit={start} aria-label="Start a session">
      <label>
        <span className="sr-only">What should the agent do?</span>
        <textarea
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              void start();
            }
          }}
          placeholder="What should the agent do? (Enter starts a session; Shift+Enter for a new line)"
          rows={3}
          aria-label="What should the agent do?"
        />
      </label>
      <div className="startbar">
        <label className="projectpick">
          <span className="sr-only">Project</span>
          <select value={project} onChange={(e) => setProject(e.target.value)} aria-label="Project">
            {projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        {error && <p className="error" role="alert">{error}</p>}
        <span className="spacer" />
        <button type="submit" disabled={busy || !text.trim()}>{busy ? "Starting…" : "Start session"}</button>
      </div>
    </form>
  );
}

function CreateProject({ org, onCreated }: { org: string; onCreated: (p: Project) => void }) {
  const [form, setForm] = useState<ProjectIn>({ name: "", setup_script: "", default_model: "", default_agent: "build" });
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const set = (k: keyof ProjectIn) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>) =>
    setForm({ ...form, [k]: e.target.value });
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      onCreated(await post<Project>(`/api/orgs/${org}/projects/`, form));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card form" onSubmit={submit} aria-label="Create project">
      <label>Name<input value={form.name} onChange={set("name")} required autoFocus /></label>
      <label>Default model <span className="muted">(provider/model)</span>
        <input value={form.default_model} onChange={set("default_model")} placeholder="openai/gpt-4o-mini" />
      </label>
      <label>Default agent
        <select value={form.default_agent} onChange={set("default_agent")}>
          <option value="build">build</option>
          <option value="plan">plan</option>
        </select>
      </label>
      <label>Setup script <span className="muted">(runs in the sandbox before the first step)</span>
        <textarea value={form.setup_script} onChange={set("setup_script")} rows={3} className="mono" />
      </label>
      {error && <p className="error" role="alert">{error}</p>}
      <button type="submit" disabled={busy}>{busy ? "Creating…" : "Create project"}</button>
    </form>
  );
}
