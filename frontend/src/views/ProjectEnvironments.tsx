// A project's cached environments: what a setup script left, kept as a layer per commit, script, image and
// env (hangar.engine.workspace.env_cache), with what each takes on disk; admins drop one.
import { useEffect, useState } from "react";
import { api, get, projectPath, type CachedEnvironment, type Project } from "../api/client";

function size(bytes: number): string {
  if (bytes >= 1024 * 1024 * 1024) return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

// What the setup script left, kept per commit, script, image and env; the next session starts from it.
export function Environments({ org, project, admin }: { org: string; project: Project; admin: boolean }) {
  const base = `${projectPath(org, project.id)}environments/`;
  const [envs, setEnvs] = useState<CachedEnvironment[] | null>(null);
  const [error, setError] = useState("");
  const load = () => get<CachedEnvironment[]>(base).then(setEnvs).catch((e) => setError((e as Error).message));
  useEffect(() => {
    void load();
  }, [base]);
  const remove = (key: string) =>
    api("DELETE", `${base}${key}`).then(load).catch((e) => setError((e as Error).message));
  const total = (envs ?? []).reduce((sum, e) => sum + e.bytes, 0);
  return (
    <section className="card" aria-labelledby="envs-h">
      <h2 id="envs-h">Cached environments</h2>
      <p className="muted small">
        What the setup script left in the workspace, kept per repository commit, script, image and env: the next session
        on the same commit starts from it without running the script. Unused ones are pruned, least recently used first.
      </p>
      {envs?.length === 0 && <p className="muted">None yet: the next session that runs the setup script keeps one.</p>}
      {!!envs?.length && (
        <div className="tablewrap" tabIndex={0}>
          <table aria-label="Cached environments">
            <thead>
              <tr><th>Commit</th><th>Script</th><th>Image</th><th>Size</th><th>Files</th><th>Last used</th>{admin && <th><span className="sr-only">Actions</span></th>}</tr>
            </thead>
            <tbody>
              {envs.map((e) => (
                <tr key={e.key}>
                  <td className="mono small">{e.commit ? e.commit.slice(0, 10) : "no repository"}</td>
                  <td className="mono small">{e.script}</td>
                  <td className="mono small">{e.image}</td>
                  <td>{size(e.bytes)}</td>
                  <td>{e.files}</td>
                  <td className="small">{new Date(e.last_used * 1000).toLocaleString()}</td>
                  {admin && <td><button type="button" className="ghost danger" onClick={() => remove(e.key)} aria-label={`Remove the environment of ${e.commit.slice(0, 10) || "the setup script"}`}>Remove</button></td>}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!!envs?.length && <p className="small" role="status">{envs.length} kept, {size(total)} in all.</p>}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}
