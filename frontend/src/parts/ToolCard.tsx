import { useContext, useMemo, useState } from "react";
import type { Part } from "../api/conversation";
import { highlight } from "./markdown";
import { McpCard, mcpCall, McpServerNames } from "./McpCard";
import { icon, shownState } from "./toolState";

const COMPACT = new Set(["read", "grep", "glob", "list", "ls", "todoread", "todowrite"]);
const DIFFS = new Set(["edit", "write", "apply_patch", "patch", "multiedit"]);

/** A tool part's card: an MCP server's tool (`<server>_<tool>`) has its own, naming the server. */
export function ToolCard({ part, waiting = false }: { part: Part; waiting?: boolean }) {
  const call = mcpCall(part, useContext(McpServerNames));
  return call ? <McpCard part={part} call={call} waiting={waiting} /> : <BuiltinCard part={part} waiting={waiting} />;
}

function BuiltinCard({ part, waiting }: { part: Part; waiting: boolean }) {
  const state = part.state ?? { status: "pending" as const };
  const tool = part.tool ?? "tool";
  const input = state.input ?? {};
  const meta = state.metadata ?? {};
  const title = state.title || summary(tool, input);
  const compact = COMPACT.has(tool);
  const [open, setOpen] = useState(!compact);
  const output = tool === "bash" ? String(meta.output ?? state.output ?? "") : String(state.output ?? "");
  const diff = typeof meta.diff === "string" ? meta.diff : undefined;
  const shown = shownState(part, waiting);
  return (
    <div className={`tool tool-${shown.key} ${compact ? "compact" : ""}`} data-tool={tool} data-state={state.status} data-shown={shown.key} data-call-id={part.callID}>
      <button className="toolhead" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`toolstate ${shown.key}`} aria-label={shown.label}>{icon(shown.key)}</span>
        <span className="toolname">{tool}</span>
        <span className="tooltitle">{title}</span>
        <span className="muted small toolstatus">{shown.label}</span>
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
