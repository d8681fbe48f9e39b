import { useCallback, useEffect, useRef, useState } from "react";
import { get, type Schemas } from "../api/client";
import { orgStream } from "../api/stream";
import { Link } from "../router";

type Pending = Schemas["PendingOutput"];
type Item = { id: string; kind: "permission" | "question"; session: Schemas["WaitingSession"]; what: string };

const REFRESH_ON = /^(permission|question)\./;

// A request the project's headless ask policy routed: whether it waits for this person, and until when.
function routing(p: Pending["permissions"][number]): string {
  const who = p.forYou ? " · routed to you" : p.approvers.length ? " · routed to approvers" : "";
  const until = p.expiresAt ? ` · expires ${new Date(p.expiresAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}` : "";
  return who + until;
}

// What the agents wait for across the org (permission requests, questions), in the top bar wherever the
// person is: a count that opens a list of links to the sessions asking. Refetched when the org's stream
// announces a request or its reply, and after each reconnect.
export function Notices({ org }: { org: string }) {
  const [items, setItems] = useState<Item[]>([]);
  const [open, setOpen] = useState(false);
  const timer = useRef<number>(undefined);
  const box = useRef<HTMLDivElement>(null);

  const load = useCallback(async () => {
    try {
      const pending = await get<Pending>(`/api/orgs/${encodeURIComponent(org)}/pending/`);
      setItems([
        ...pending.permissions.map((p) => ({
          id: p.id,
          kind: "permission" as const,
          session: p.session,
          what: `asks to run ${p.permission}${p.patterns.length ? `: ${p.patterns.join(", ")}` : ""}${routing(p)}`,
        })),
        ...pending.questions.map((q) => {
          const first = q.questions[0] as { header?: string; question?: string } | undefined;
          const more = q.questions.length > 1 ? ` (+${q.questions.length - 1} more)` : "";
          return { id: q.id, kind: "question" as const, session: q.session, what: `asks: ${first?.question ?? first?.header ?? "a question"}${more}` };
        }),
      ].sort((a, b) => (a.id < b.id ? -1 : 1)));
    } catch {
      setItems([]); // an auditor, or signed out: nothing to show
    }
  }, [org]);

  useEffect(() => {
    load();
    const stop = orgStream(org, (frame) => {
      if (frame.type === "stream.open" || REFRESH_ON.test(frame.type)) {
        window.clearTimeout(timer.current);
        timer.current = window.setTimeout(load, 150);
      }
    });
    return () => {
      window.clearTimeout(timer.current);
      stop();
    };
  }, [org, load]);

  useEffect(() => {
    if (items.length === 0) setOpen(false);
  }, [items.length]);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent | KeyboardEvent) => {
      if (e instanceof KeyboardEvent ? e.key === "Escape" : !box.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", close);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", close);
    };
  }, [open]);

  return (
    <div className="notices" ref={box}>
      <span className="sr-only" role="status">{items.length ? `${items.length} waiting for you` : ""}</span>
      {items.length > 0 && (
        <button
          className="noticebtn"
          aria-label={`${items.length} waiting for you`}
          aria-expanded={open}
          aria-controls="notice-list"
          onClick={() => setOpen(!open)}
          data-testid="notices"
        >
          <span className="dot" aria-hidden="true" />
          {items.length}
          <span className="noticeword"> waiting</span>
        </button>
      )}
      {open && (
        <ul id="notice-list" className="noticelist" aria-label="Waiting for you">
          {items.map((item) => (
            <li key={item.id} className={`notice notice-${item.kind}`}>
              <Link to={`/o/${org}/p/${item.session.project}/s/${item.session.id}`} onNavigate={() => setOpen(false)}>
                <span className="noticetitle">{item.session.title || "Untitled session"}</span>
                <span className="muted small">{item.what}</span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
