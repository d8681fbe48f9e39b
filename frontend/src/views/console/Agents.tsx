// What the agent is told and who it can be: the org's instructions (sent in every session after the
// workspace's AGENTS.md; a running session is told of a change at its next step), and a project's own
// agents (OpenCode's `agent` config: {name: {description, mode, prompt, model, steps, permission...}}),
// edited as rows (name, mode, model, description, prompt) or as JSON, with the server's errors naming the
// bad field.
import { useEffect, useState } from "react";
import { api, type Project } from "../../api/client";
import { AgentsEditor, type AgentFields } from "../editors";
import { ErrorLine, useAction, useLoad } from "./common";

const EXAMPLE = {
  reviewer: {
    description: "Reviews a change for bugs and style",
    mode: "subagent",
    prompt: "You review code. Point out bugs first, then style.",
    permission: { edit: "deny" },
  },
};

export function Agents({ org }: { org: string }) {
  return (
    <>
      <OrgInstructions org={org} />
      <ProjectAgents org={org} />
    </>
  );
}

function OrgInstructions({ org }: { org: string }) {
  const path = `/api/orgs/${org}/instructions`;
  const { data, error } = useLoad<{ text: string }>(path);
  const [text, setText] = useState("");
  const [saved, setSaved] = useState(false);
  const [busy, actionError, run] = useAction();
  useEffect(() => {
    if (data) setText(data.text);
  }, [data]);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved(false);
    if (await run(() => api("PUT", path, { text }))) setSaved(true);
  };
  return (
    <section className="card" aria-labelledby="instructions-h">
      <h2 id="instructions-h">Instructions for every session</h2>
      <p className="muted small">
        Markdown the agent reads in every session of this organisation, after the repository's AGENTS.md.
        Sessions already running are told of a change at their next step.
      </p>
      <ErrorLine error={error} />
      <form className="form" onSubmit={save} aria-label="Organisation instructions">
        <label>Instructions
          <textarea
            className="mono rules"
            value={text}
            maxLength={20000}
            disabled={!data}
            onChange={(e) => setText(e.target.value)}
          />
        </label>
        <ErrorLine error={actionError} />
        {saved && <p className="banner ok" role="status">Instructions saved.</p>}
        <button type="submit" disabled={busy || !data}>Save instructions</button>
      </form>
    </section>
  );
}

function ProjectAgents({ org }: { org: string }) {
  const { data: projects, error, reload } = useLoad<Project[]>(`/api/orgs/${org}/projects/`);
  const [picked, setPicked] = useState("");
  const project = projects?.find((p) => String(p.id) === picked) ?? projects?.[0];
  const [agents, setAgents] = useState<Record<string, AgentFields>>({});
  const [saved, setSaved] = useState(false);
  const [invalid, setInvalid] = useState("");
  const [busy, actionError, run] = useAction();
  // Only a switch of project loads its agents: the list reloaded after a save must not overwrite what
  // the admin typed while it was on its way.
  useEffect(() => {
    if (project) setAgents((project.agents ?? {}) as Record<string, AgentFields>);
    setSaved(false);
  }, [project?.id]);
  const edit = (next: Record<string, AgentFields>) => {
    setAgents(next);
    setSaved(false);
  };
  if (!project) return <section className="card"><ErrorLine error={error} /></section>;
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved(false);
    if (invalid) return;
    if (await run(() => api("PATCH", `/api/orgs/${org}/projects/${project.id}/`, { agents }))) {
      setSaved(true);
      reload();
    }
  };
  return (
    <section className="card" aria-labelledby="agents-h">
      <h2 id="agents-h">Project agents</h2>
      <p className="muted small">
        Agents a prompt can name and the task tool can start, as OpenCode's <code>agent</code> config. They
        win over a repository's own <code>.opencode/agents/*.md</code> of the same name.
      </p>
      <form className="form" onSubmit={save} aria-label="Project agents">
        <label>Project
          <select value={String(project.id)} onChange={(e) => setPicked(e.target.value)}>
            {projects?.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <AgentsEditor label="Agents" agents={agents} onChange={edit} onInvalid={setInvalid} />
        <p className="muted small">In the JSON view, for example: <code>{JSON.stringify(EXAMPLE)}</code></p>
        <ErrorLine error={invalid || actionError} />
        {saved && <p className="banner ok" role="status">Agents saved.</p>}
        <div><button type="submit" disabled={busy || !!invalid}>Save agents</button></div>
      </form>
    </section>
  );
}
