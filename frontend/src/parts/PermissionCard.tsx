import { useState } from "react";
import { post, type PermissionReplyInput, type PermissionRequest } from "../api/client";

export function PermissionCard({ base, request }: { base: string; request: PermissionRequest }) {
  const [rejecting, setRejecting] = useState(false);
  const [message, setMessage] = useState("");
  const [scope, setScope] = useState<PermissionReplyInput["scope"]>("session");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const reply = async (body: PermissionReplyInput) => {
    setBusy(true);
    try {
      await post(`${base}permissions/${request.id}/reply/`, body);
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  const meta = request.metadata as { command?: string; diff?: string; filepath?: string };
  const always = request.always.length ? request.always : request.patterns;
  return (
    <section className="permission" role="alert" aria-label={`Permission request: ${request.permission}`} data-permission={request.id}>
      <h2>The agent asks to run <code>{request.permission}</code></h2>
      <p className="mono">{meta.command ?? request.patterns.join(", ")}</p>
      {meta.diff && <pre className="diff small">{meta.diff.slice(0, 4000)}</pre>}
      <div className="actions">
        <button disabled={busy} onClick={() => reply({ reply: "once", scope })} autoFocus>Allow once</button>
        <button disabled={busy} className="secondary" onClick={() => reply({ reply: "always", scope })}>
          Allow always
        </button>
        <label className="small">
          <span className="sr-only">Scope of "always"</span>
          <select value={scope} onChange={(e) => setScope(e.target.value as PermissionReplyInput["scope"])} aria-label="Scope of always">
            <option value="session">this session</option>
            <option value="project">the whole project</option>
          </select>
        </label>
        <span className="muted small">always allows: {always.join(", ")}</span>
        <button disabled={busy} className="danger" onClick={() => setRejecting(!rejecting)} aria-expanded={rejecting}>Reject…</button>
      </div>
      {rejecting && (
        <form
          className="rejectform"
          onSubmit={(e) => {
            e.preventDefault();
            reply({ reply: "reject", message, scope });
          }}
        >
          <label>
            Tell the agent why (optional)
            <input value={message} onChange={(e) => setMessage(e.target.value)} autoFocus />
          </label>
          <button type="submit" className="danger" disabled={busy}>Reject</button>
        </form>
      )}
      {error && <p className="error">{error}</p>}
    </section>
  );
}
