// What a tool card shows of its part's state, shared by the built-in tools' cards and the MCP card.
import type { Part } from "../api/conversation";

/** What a card shows: the part's status, except a finished command that exited non-zero ("failed", as
 * OpenCode's bash keeps it "completed" with the exit code in its metadata) and a call parked on a
 * permission request ("waiting", not "running"). */
export function shownState(part: Part, waiting: boolean): { key: string; label: string } {
  const state = part.state ?? { status: "pending" as const };
  const exit = state.metadata?.exit;
  if (waiting && (state.status === "pending" || state.status === "running")) {
    return { key: "waiting", label: "waiting for approval" };
  }
  if (state.status === "completed" && typeof exit === "number" && exit !== 0) {
    return { key: "failed", label: `failed · exit code ${exit}` };
  }
  return { key: state.status, label: state.status };
}

export function icon(status: string): string {
  return { pending: "○", running: "◐", waiting: "⏸", completed: "✓", failed: "✕", error: "✕" }[status] ?? "○";
}
