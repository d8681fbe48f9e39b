// Where a project's sessions get their code: the repository URL (https:// with a token, or SSH with a
// deploy key), its default branch, and the SSH host key pinned when the URL was saved. Credentials are
// write-only: the token shows as a hint, a deploy key as its public half (to add to the repository).
import { useEffect, useState } from "react";
import { api, type Project } from "../../api/client";
import { ErrorLine, useAction, useLoad } from "./common";

const isSsh = (url: string) => url.startsWith("ssh://") || /^[^/:@]+@[^/:]+:/.test(url);

export function Repositories({ org }: { org: string }) {
  const { data: projects, error, reload } = useLoad<Project[]>(`/api/orgs/${org}/projects/`);
  const [picked, setPicked] = useState("");
  const project = projects?.find((p) => String(p.id) === picked) ?? projects?.[0];
  if (!project) return <section className="card"><ErrorLine error={error} /></section>;
  const picker = (
    <label>Project
      <select value={String(project.id)} onChange={(e) => setPicked(e.target.value)}>
        {projects?.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
      </select>
    </label>
  );
  return <RepositoryForm org={org} project={project} onSaved={reload} picker={picker} error={error} />;
}

// The repository of one project (also on the project's settings page).
export function RepositoryForm(props: { org: string; project: Project; onSaved: () => void; picker?: React.ReactNode; error?: string }) {
  const { org, project } = props;
  const reload = props.onSaved;
  const error = props.error ?? "";
  const [url, setUrl] = useState("");
  const [branch, setBranch] = useState("");
  const [username, setUsername] = useState("");
  const [token, setToken] = useState("");
  const [key, setKey] = useState("");
  const [notice, setNotice] = useState("");
  const [busy, actionError, run] = useAction();
  useEffect(() => {
    if (!project) return;
    setUrl(project.repo_url);
    setBranch(project.repo_default_branch);
    setUsername(project.repo_username);
    setToken("");
    setKey("");
  }, [project?.id, project?.updated_at]);
  useEffect(() => setNotice(""), [project?.id]);

  const patch = async (body: Record<string, string>, done: string) => {
    setNotice("");
    if (await run(() => api("PATCH", `/api/orgs/${org}/projects/${project.id}/`, body))) {
      setNotice(done);
      reload();
    }
  };
  const save = (e: React.FormEvent) => {
    e.preventDefault();
    const body: Record<string, string> = { repo_url: url, repo_default_branch: branch, repo_username: username };
    if (token) body.repo_token = token;
    if (key) body.repo_ssh_key = key;
    void patch(body, "Repository saved.");
  };
  const ssh = isSsh(url);
  return (
    <section className="card" aria-labelledby="repos-h">
      <h2 id="repos-h">Repository</h2>
      <p className="muted small">
        New sessions start from a clone of this repository, on a branch of their own. The clone, fetches and
        pushes run outside the sandbox, so credentials never reach the agent.
      </p>
      <ErrorLine error={error} />
      <form className="form" onSubmit={save} aria-label="Project repository">
        {props.picker}
        <label>Repository URL
          <input value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://github.com/org/repo.git or git@github.com:org/repo.git" spellCheck={false} />
        </label>
        <label>Default branch
          <input value={branch} onChange={(e) => setBranch(e.target.value)} placeholder="the remote's HEAD" spellCheck={false} />
        </label>
        {!ssh && (
          <>
            <label>Username
              <input value={username} onChange={(e) => setUsername(e.target.value)} placeholder="x-access-token" />
            </label>
            <label>Token {project.repo_token_hint && <span className="muted">(stored: {project.repo_token_hint}; leave empty to keep)</span>}
              <input type="password" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" />
            </label>
          </>
        )}
        {ssh && (
          <label>Deploy key (private, without passphrase; leave empty to keep)
            <textarea className="mono rules short" value={key} onChange={(e) => setKey(e.target.value)} spellCheck={false} placeholder="-----BEGIN OPENSSH PRIVATE KEY-----" />
          </label>
        )}
        <ErrorLine error={actionError} />
        {notice && <p className="banner ok" role="status">{notice}</p>}
        <div className="rowbuttons">
          <button type="submit" disabled={busy}>Save repository</button>
          {ssh && project.repo_url === url && (
            <button type="button" disabled={busy} onClick={() => void patch({ repo_ssh_key: "generate" }, "A new deploy key was made: add its public key to the repository.")}>
              {project.repo_ssh_public_key ? "Replace the deploy key" : "Generate a deploy key"}
            </button>
          )}
        </div>
      </form>
      {project.repo_ssh_public_key && (
        <div className="form" style={{ marginTop: 12 }}>
          <label>Deploy key to add to the repository (read-only; allow write access to push)
            <textarea className="mono rules short" readOnly value={project.repo_ssh_public_key} aria-label="Deploy public key" />
          </label>
        </div>
      )}
      {project.repo_ssh_host_key && (
        <p className="small">
          Host key pinned: <code aria-label="Host key fingerprint">{project.repo_ssh_host_key_fingerprint}</code>{" "}
          <button type="button" className="secondary" disabled={busy} onClick={() => void patch({ repo_ssh_host_key: "" }, "Host key read again.")}>
            Read it again
          </button>
        </p>
      )}
    </section>
  );
}
