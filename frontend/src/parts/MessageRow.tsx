import { memo, useMemo } from "react";
import type { Message, Part } from "../api/conversation";
import { renderMarkdown } from "./markdown";
import { ToolCard } from "./ToolCard";
import { fmtTokens } from "./format";

const NONE: ReadonlySet<string> = new Set();

/** `waiting`: the call ids of this session's tool calls parked on a permission request. */
export const MessageRow = memo(function MessageRow({
  message,
  queued,
  waiting = NONE,
}: {
  message: Message;
  queued: boolean;
  waiting?: ReadonlySet<string>;
}) {
  const { info, parts } = message;
  const user = info.role === "user";
  return (
    <article className={`msg ${user ? "user" : "assistant"}`} data-message-id={info.id} aria-label={user ? "You" : "Agent"}>
      {user && queued && <span className="badge queued" data-testid="queued">queued</span>}
      {parts.map((p) => <PartView key={p.id} part={p} waiting={!!p.callID && waiting.has(p.callID)} />)}
      {info.error && (
        <p className="error" role="alert" data-testid="turn-error">{errorText(info.error)}</p>
      )}
    </article>
  );
});

/** An error as OpenCode shapes it ({name, data: {message}}), in words. */
export function errorText(error: { name?: string; data?: { message?: string } }): string {
  return error.data?.message || error.name || "The run failed";
}

function PartView({ part, waiting }: { part: Part; waiting: boolean }) {
  switch (part.type) {
    case "text":
      return part.synthetic ? null : <Markdown text={part.text ?? ""} />;
    case "reasoning":
      return (
        <details className="reasoning">
          <summary>Thinking</summary>
          <div className="muted pre">{part.text}</div>
        </details>
      );
    case "tool":
      return <ToolCard part={part} waiting={waiting} />;
    case "step-finish":
      return (
        <div className="stepcost muted small" data-testid="step-cost">
          {fmtTokens((part.tokens?.input ?? 0) + (part.tokens?.output ?? 0))} tokens
          {part.tokens?.reasoning ? ` (${fmtTokens(part.tokens.reasoning)} reasoning)` : ""} · ${(part.cost ?? 0).toFixed(4)}
        </div>
      );
    case "file":
      return <div className="filepart muted">📎 {String(part.filename ?? part.url ?? "file")}</div>;
    case "retry":
      return <div className="muted small">Retrying: {String((part.error as { message?: string })?.message ?? "")}</div>;
    default:
      return null;
  }
}

function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div className="md" dangerouslySetInnerHTML={{ __html: html }} />;
}
