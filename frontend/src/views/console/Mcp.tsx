// The org's MCP allow-list (issue 27): which local commands and remote URLs its projects and workspaces may
// name as MCP servers at all. A server the list does not match is refused when a project is saved and left
// out of every run. Admins and owners edit it; a 400 names the bad pattern (`policy.remote[1]`) and its
// message is shown beside that row, with what was typed kept.
import { useEffect, useState } from "react";
import { api, fieldErrors } from "../../api/client";
import { ErrorLine, useLoad } from "./common";

type Policy = { local: string[]; remote: string[] };

const KINDS = [
  {
    key: "local",
    label: "Local commands",
    item: "Local command",
    add: "Add local command",
    placeholder: "npx -y @modelcontextprotocol/server-*",
    help: "A local server's command, its words joined by single spaces, must match one of these. Local servers run inside the session's sandbox.",
  },
  {
    key: "remote",
    label: "Remote URLs",
    item: "Remote URL",
    add: "Add remote URL",
    placeholder: "https://mcp.example.com/*",
    help: "A remote server's URL must match one of these. Hangar's worker calls it; private, loopback and metadata addresses are refused unless the operator allows their network (HANGAR_MCP_ALLOWED_NETWORKS).",
  },
] as const;

export function McpPolicy({ org }: { org: string }) {
  const path = `/api/orgs/${org}/mcp-policy`;
  const { data, error } = useLoad<{ policy: Policy }>(path);
  const [policy, setPolicy] = useState<Policy>({ local: [], remote: [] });
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState("");
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (data) setPolicy(data.policy);
  }, [data]);
  const edit = (kind: keyof Policy, list: string[]) => {
    setSaved(false);
    setPolicy({ ...policy, [kind]: list });
  };
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    setSaved(false);
    setErrors({});
    setFailure("");
    setBusy(true);
    // Rows are sent as typed (trimmed): an empty one is the server's to refuse, by its index, so the message
    // lands beside the row it is about.
    const body = { policy: { local: policy.local.map((p) => p.trim()), remote: policy.remote.map((p) => p.trim()) } };
    try {
      const answer = await api<{ policy: Policy }>("PUT", path, body);
      setPolicy(answer.policy);
      setSaved(true);
    } catch (err) {
      const fields = fieldErrors(err);
      setErrors(fields);
      if (!Object.keys(fields).length) setFailure((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const other = Object.entries(errors).filter(([k]) => !/^policy\.(local|remote)/.test(k));
  return (
    <section className="card" aria-labelledby="mcp-policy-h">
      <h2 id="mcp-policy-h">MCP allow-list</h2>
      <p className="muted small">
        Which MCP servers the org's projects and workspaces may use. <code>*</code> matches any run of characters; an
        empty list allows nothing of its kind.
      </p>
      <ErrorLine error={error} />
      <form className="form" onSubmit={save} aria-label="MCP allow-list">
        {KINDS.map((kind) => (
          <fieldset key={kind.key} className="editor" aria-label={kind.label}>
            <legend>{kind.label}</legend>
            <p className="muted small">{kind.help}</p>
            {policy[kind.key].length === 0 && <p className="muted small">None allowed.</p>}
            <ol className="rows">
              {policy[kind.key].map((pattern, i) => {
                const problem = errors[`policy.${kind.key}[${i}]`];
                return (
                  <li key={i} className="row">
                    <label className="grow">{kind.item} {i + 1}
                      <input
                        value={pattern}
                        className="mono"
                        spellCheck={false}
                        placeholder={kind.placeholder}
                        aria-invalid={!!problem}
                        aria-describedby={problem ? `mcp-${kind.key}-${i}-error` : undefined}
                        onChange={(e) => edit(kind.key, policy[kind.key].map((p, j) => (j === i ? e.target.value : p)))}
                      />
                    </label>
                    <button type="button" className="icon danger" aria-label={`Remove ${kind.item} ${i + 1}`}
                      onClick={() => edit(kind.key, policy[kind.key].filter((_, j) => j !== i))}>✕</button>
                    {problem && <p className="error small fielderror" id={`mcp-${kind.key}-${i}-error`} role="alert">{problem}</p>}
                  </li>
                );
              })}
            </ol>
            {errors[`policy.${kind.key}`] && <p className="error small" role="alert">{errors[`policy.${kind.key}`]}</p>}
            <button type="button" className="secondary" onClick={() => edit(kind.key, [...policy[kind.key], ""])}>
              {kind.add}
            </button>
          </fieldset>
        ))}
        {other.map(([k, v]) => <p key={k} className="error" role="alert">{k}: {v}</p>)}
        <ErrorLine error={failure} />
        {saved && <p className="banner ok" role="status">Allow-list saved.</p>}
        <div><button type="submit" disabled={busy}>{busy ? "Saving…" : "Save MCP allow-list"}</button></div>
      </form>
    </section>
  );
}
