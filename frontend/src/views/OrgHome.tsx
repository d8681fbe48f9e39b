import { useEffect, useState } from "react";
import { get, post, type Project, type ProjectIn } from "../api/client";
import { Link, navigate } from "../router";

export function OrgHome({ org }: { org: string }) {
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [error, setError] = useState("");
  const [creating, setCreating] = useState(false);

  useEffect(() => {
    setProjects(null);
    get<Project[]>(`/api/orgs/${org}/projects/`)
      .then(setProjects)
      .catch((e) => setError(e.message));
  }, [org]);

  return (
    <div className="page">
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
            </Link>
          </li>
        ))}
      </ul>
    </div>
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
