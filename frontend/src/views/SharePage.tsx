// A session's share link (OpenCode's /share, kept inside the tenant's rules): a read-only live view of the
// conversation. It polls GET /api/shares/<token> (the server decides who may open it and masks secrets);
// there is no composer, no permission or question card, no files tab and no terminal.
import { useEffect, useState } from "react";
import { ApiError, get } from "../api/client";
import type { Message } from "../api/conversation";
import { MessageRow } from "../parts/MessageRow";

type ShareView = {
  session: { id: string; title: string; status: string; time: { created: number; updated: number } };
  share: { audience: "members" | "link"; expires: number };
  messages: Message[];
};

const REFRESH_MS = 2000;

export function SharePage({ token }: { token: string }) {
  const [view, setView] = useState<ShareView | null>(null);
  const [gone, setGone] = useState(false);

  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const load = () =>
      get<ShareView>(`/api/shares/${encodeURIComponent(token)}`)
        .then((v) => {
          if (stopped) return;
          setView(v);
          setGone(false);
          timer = window.setTimeout(load, REFRESH_MS);
        })
        .catch((e) => {
          if (stopped) return;
          if (e instanceof ApiError && e.status === 404) setGone(true);
          else timer = window.setTimeout(load, REFRESH_MS * 2);
        });
    load();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [token]);

  if (gone)
    return (
      <main className="content share" data-testid="share-missing">
        <h1>Share link not found</h1>
        <p className="muted">This link does not exist, has expired or was revoked, or it is not shared with you.</p>
      </main>
    );
  if (!view) return <div className="center muted" role="status">Loading…</div>;
  const busy = view.session.status !== "idle";
  return (
    <main className="content share" data-testid="share-view">
      <header className="sessionhead">
        <h1>{view.session.title}</h1>
        <span className="muted">
          Read-only {view.share.audience === "link" ? "link" : "view for members"} · expires{" "}
          {new Date(view.share.expires).toLocaleString()}
          {busy && <span className="badge"> working…</span>}
        </span>
      </header>
      <div className="transcript">
        {view.messages.map((m) => (
          <MessageRow key={m.info.id} message={m} queued={false} />
        ))}
      </div>
    </main>
  );
}
