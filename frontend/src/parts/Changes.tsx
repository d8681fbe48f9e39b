import type { Conversation } from "../api/conversation";
import { Diff } from "./ToolCard";

// The session's file changes as the agent made them: one diff per edit/write, grouped by step (assistant
// message), newest last. The whole-session view is the list read top to bottom.
export function Changes({ convo }: { convo: Conversation }) {
  const steps = convo
    .list()
    .filter((m) => m.info.role === "assistant")
    .map((m) => ({
      id: m.info.id,
      edits: m.parts.filter((p) => p.type === "tool" && typeof p.state?.metadata?.diff === "string" && p.state.status === "completed"),
    }))
    .filter((s) => s.edits.length > 0);
  if (steps.length === 0) return <div className="empty center">No file changes in this session yet.</div>;
  const files = new Set(steps.flatMap((s) => s.edits.map((e) => String(e.state?.title ?? ""))));
  return (
    <div className="changes">
      <p className="muted">{files.size} file(s) changed over {steps.length} step(s)</p>
      {steps.map((s, i) => (
        <section key={s.id} aria-label={`Step ${i + 1}`}>
          <h2 className="small">Step {i + 1}</h2>
          {s.edits.map((e) => (
            <div key={e.id} className="change">
              <h3 className="mono small">{e.state?.title}</h3>
              <Diff text={String(e.state?.metadata?.diff)} />
            </div>
          ))}
        </section>
      ))}
    </div>
  );
}
