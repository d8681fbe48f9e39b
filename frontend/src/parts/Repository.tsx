import { useEffect, useState } from "react";
import { get, post, type OperationAnswer, type Workspace, type WorkspaceOperation } from "../api/client";

const FINISHED = ["done", "failed"];

// The session's repository: its branch, commit-and-push and pull. Both run in a worker (202 and an
// operation; a viewer's request is refused by the API, and says so); the panel follows the operation until it has finished, then shows what it did.
export function Repository({ base }: { base: string }) {
  const [ws, setWs] = useState<Workspace | null>(null);
  const [op, setOp] = useState<WorkspaceOperation | null>(null);
  const [message, setMessage] = useState("");
  const [error, setError] = useState("");
  const load = () =>
    get<Workspace>(`${base}workspace/`)
      .then((w) => {
        setWs(w);
        setOp(w.operations[0] ?? null);
      })
      .catch((e) => setError(e.message));
  useEffect(() => {
    load();
  }, [base]);
  // Follow a running operation by id; the workspace is read again once it has finished.
  useEffect(() => {
    if (!op || FINISHED.includes(op.status)) return;
    const timer = setTimeout(() => {
      get<OperationAnswer>(`${base}workspace/operations/${op.id}/`)
        .then((a) => (FINISHED.includes(a.operation.status) ? load() : setOp(a.operation)))
        .catch((e) => setError(e.message));
    }, 500);
    return () => clearTimeout(timer);
  }, [op, base]);

  if (!ws || ws.state === "none") return null;
  const busy = !!op && !FINISHED.includes(op.status);
  const start = (kind: "push" | "pull") => {
    setError("");
    post<OperationAnswer>(`${base}workspace/${kind}/`, kind === "push" ? { message } : {})
      .then((a) => {
        setOp(a.operation);
        if (kind === "push") setMessage("");
      })
      .catch((e) => setError(e.message));
  };
  const result = op?.result as { commit?: string; compare_url?: string; merged?: boolean } | null;
  const failure = op?.error as { message?: string; kind?: string } | null;
  return (
    <section className="card repo" aria-labelledby="repo-h">
      <h2 id="repo-h">Repository</h2>
      <p className="small">
        <span className="mono">{ws.repo_url}</span> · branch <code>{ws.branch}</code> ·{" "}
        <span data-testid="workspace-state">{ws.state}</span>
      </p>
      {ws.state === "ready" && (
        <form
          className="inline"
          onSubmit={(e) => {
            e.preventDefault();
            if (message.trim()) start("push");
          }}
        >
          <label className="grow">
            <span className="sr-only">Commit message</span>
            <input value={message} onChange={(e) => setMessage(e.target.value)} placeholder="Commit message" aria-label="Commit message" />
          </label>
          <button type="submit" disabled={busy || !message.trim()}>Commit and push</button>
          <button type="button" className="ghost" disabled={busy} onClick={() => start("pull")}>Pull</button>
        </form>
      )}
      {op && (
        <p className="small" role="status" data-testid="repo-operation" data-status={op.status}>
          {op.kind === "push" ? "Push" : "Pull"} {op.status}
          {op.status === "done" && result?.commit && <> · <code>{result.commit.slice(0, 12)}</code></>}
          {op.status === "done" && result?.compare_url && (
            <> · <a href={result.compare_url} target="_blank" rel="noreferrer">compare</a></>
          )}
          {op.status === "failed" && failure?.message && <span className="error"> · {failure.message}</span>}
        </p>
      )}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}
