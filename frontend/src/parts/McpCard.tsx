// A tool part that calls an MCP server's tool: which server and tool (the engine names it `<server>_<tool>`),
// its arguments, its result or error, bounded as the other cards, and how long the call took.
import { createContext, useState } from "react";
import type { Part } from "../api/conversation";
import { icon, shownState } from "./toolState";

/** The names of the project's MCP servers, so a call the engine has not finished (no metadata yet) or
 * that failed (an error part carries none) is still known for an MCP call by its `<server>_` prefix. */
export const McpServerNames = createContext<readonly string[]>([]);

export type McpCall = { server: string; tool: string };

const SHOWN = 20000; // characters of arguments or result a card shows, as the other cards

// The engine's name for a server's tool: `<server>_<tool>`, characters other than letters, digits, `_`
// and `-` as `_` (hangar/engine/mcp/tools.py tool_name).
const toolPrefix = (server: string) => `${server.replace(/[^A-Za-z0-9_-]/g, "_")}_`;

/** Which server and tool a tool part calls, when it is an MCP call: from what the engine stored in its
 * metadata (`mcp: {server, tool, bytes, ms}`), else from the longest known server name its tool starts with. */
export function mcpCall(part: Part, servers: readonly string[]): McpCall | null {
  const meta = part.state?.metadata?.mcp as { server?: unknown; tool?: unknown } | undefined;
  if (meta && typeof meta.server === "string" && typeof meta.tool === "string") return { server: meta.server, tool: meta.tool };
  const tool = part.tool ?? "";
  const server = [...servers].sort((a, b) => b.length - a.length).find((s) => tool.startsWith(toolPrefix(s)) && tool.length > toolPrefix(s).length);
  return server ? { server, tool: tool.slice(toolPrefix(server).length) } : null;
}

// The server's own time when the engine measured it (metadata `mcp.ms`), else the part's start to end
// (which also counts a permission ask's wait).
function latency(measured: unknown, start?: number, end?: number): string {
  const ms = typeof measured === "number" ? measured : typeof start === "number" && typeof end === "number" && end >= start ? end - start : null;
  if (ms === null) return "";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

function bytes(n: unknown): string {
  if (typeof n !== "number") return "";
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function McpCard({ part, call, waiting }: { part: Part; call: McpCall; waiting: boolean }) {
  const state = part.state ?? { status: "pending" as const };
  const [open, setOpen] = useState(true);
  const shown = shownState(part, waiting);
  const input = state.input ?? {};
  const meta = state.metadata ?? {};
  const output = String(state.output ?? "");
  const took = latency((meta.mcp as { ms?: unknown } | undefined)?.ms, state.time?.start, state.time?.end);
  const size = bytes((meta.mcp as { bytes?: unknown } | undefined)?.bytes);
  const args = Object.keys(input).length ? JSON.stringify(input, null, 2) : "";
  return (
    <div className={`tool mcp tool-${shown.key}`} data-tool={part.tool} data-mcp-server={call.server} data-state={state.status} data-shown={shown.key} data-call-id={part.callID}>
      <button className="toolhead" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`toolstate ${shown.key}`} aria-label={shown.label}>{icon(shown.key)}</span>
        <span className="badge">MCP</span>
        <span className="toolname">{call.server}</span>
        <span className="tooltitle">{call.tool}</span>
        <span className="muted small toolstatus">{took ? `${shown.label} · ${took}` : shown.label}</span>
      </button>
      {open && (
        <div className="toolbody">
          <dl className="mcpmeta small" aria-label="MCP call">
            <div><dt>Server</dt><dd className="mono">{call.server}</dd></div>
            <div><dt>Tool</dt><dd className="mono">{call.tool}</dd></div>
            {took && <div><dt>Latency</dt><dd>{took}</dd></div>}
            {size && <div><dt>Result</dt><dd>{size}{meta.truncated ? " (truncated for the model)" : ""}</dd></div>}
          </dl>
          {args && (
            <details className="toolinput" open>
              <summary>Arguments</summary>
              <pre aria-label="Arguments">{args.slice(0, SHOWN)}</pre>
            </details>
          )}
          {output && <pre className="output" aria-label="Result">{output.slice(0, SHOWN)}</pre>}
          {state.status === "error" && <p className="error">{String(state.error ?? "").slice(0, SHOWN)}</p>}
        </div>
      )}
    </div>
  );
}
