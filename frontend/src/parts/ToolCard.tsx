import { useMemo, useState } from "react";
import type { Part } from "../api/conversation";
import { highlight } from "./markdown";

const COMPACT = new Set(["read", "grep", "glob", "list", "ls", "todoread", "todowrite"]);
const DIFFS = new Set(["edit", "write", "apply_patch", "patch", "multiedit"]);

export function ToolCard({ part }: { part: Part }) {
  const state = part.state ?? { status: "pending" as const };
  const tool = part.tool ?? "tool";
  const input = state.input ?? {};
  const meta = state.metadata ?? {};
  const title = state.title || summary(tool, input);
  const compact = COMPACT.has(tool);
  const [open, setOpen] = useState(!compact);
  const output = tool === "bash" ? String(meta.output ?? state.output ?? "") : String(state.output ?? "");
  const diff = typeof meta.diff === "string" ? meta.diff : undefined;
  return (
    <div className={`tool tool-${state.status} ${compact ? "compact" : ""}`} data-tool={tool} data-state={state.status} data-call-id={part.callID}>
      <button className="toolhead" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`toolstate ${state.status}`} aria-label={state.status}>{icon(state.status)}</span>
        <span className="toolname">{tool}</span>
        <span className="tooltitle">{title}</span>
        <span className="muted small">{state.status}</span>
      </button>
      {open && (
        <div className="toolbody">
          {tool === "bash" && (
            <pre className="term" aria-label="Command output"><span className="prompt">$ </span>{String(input.command ?? "")}{"\n"}{output}</pre>
          )}
          {DIFFS.has(tool) && diff && <Diff text={diff} />}
          {DIFFS.has(tool) && !diff && typeof input.content === "string" && (
            <pre className="code">{String(input.content).slice(0, 20000)}</pre>
          )}
          {!["bash"].includes(tool) && !DIFFS.has(tool) && output && <pre className="output">{output.slice(0, 20000)}</pre>}
          {state.status === "error" && <p className="error">{state.error}</p>}
          {!compact && tool !== "bash" && !DIFFS.has(tool) && Object.keys(input).length > 0 && (
            <details className="toolinput"><summary>Input</summary><pre>{JSON.stringify(input, null, 2)}</pre></details>
          )}
        </div>
      )}
    </div>
  );
}

export function Diff({ text }: { text: string }) {
  const html = useMemo(() => highlight(text, "diff"), [text]);
  return <pre className="diff" dangerouslySetInnerHTML={{ __html: html }} />;
}

function summary(tool: string, input: Record<string, unknown>): string {
  const v = input.command ?? input.filePath ?? input.path ?? input.pattern ?? input.description ?? "";
  return String(v).slice(0, 200);
}

function icon(status: string): string {
  return { pending: "○", running: "◐", completed: "✓", error: "✕" }[status] ?? "○";
}
