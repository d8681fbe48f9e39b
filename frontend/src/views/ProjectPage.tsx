import { useCallback, useEffect, useRef, useState } from "react";
import { api, get, post, projectPath, type Project, type Session, type SessionPage } from "../api/client";
import { orgStream } from "../api/stream";
import { Link, navigate } from "../router";
import { SessionView } from "./SessionView";

export function ProjectPage(props: { org: string; project: number; session?: string; tab?: string }) {
  const { org, project, session } = props;
  const [info, setInfo] = useState<Project | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    get<Project>(projectPath(org, project)).then(setInfo).catch((e) => setError(e.message));
  }, [org, project]);
  if (error) return <p className="error center" role="alert">{error}</p>;
  return (
    <div className={`split ${session ? "has-session" : ""}`}>
      <SessionList org={org} project={project} current={session} projectInfo={info} />
      <section className="pane" aria-label="Session">
        {session ? (
          <SessionView key={session} org={org} project={project} sessionId={session} tab={props.tab} projectInfo={info} />
        ) : (
          <div className="empty center">Pick a session, or start a new one.</div>
        )}
      </section>
    </div>
  );
}

function SessionList(props: { org: string; project: number; current?: string; projectInfo: Project | null }) {
  const { org, project, current } = props;
  const [sessions, setSessions] = useState<Session[] | null>(null);
  const [search, setSearch] = useState("");
  const [error, setError] = useState("");
  const base = `${projectPath(org, project)}sessions/`;
  const load = useCallback(async () => {
    try {
      const page = await get<SessionPage>(`${base}?limit=200&search=${encodeURIComponent(search)}`);
      setSessions(page.items);
      setError("");
    } catch (e) {
      setError((e as Error).message);
    }
  }, [base, search]);
  const timer = useRef<number>(undefined);
  useEffect(() => {
    load();
  }, [load]);
  useEffect(() => {
    // Org-wide session changes (created, title, status, deleted): refetch, coalesced.
    return orgStream(org, (frame) => {
      if (frame.type === "stream.open" || frame.type.startsWith("session.")) {
        window.clearTimeout(timer.current);
        timer.current = window.setTimeout(load, 150);
      }
    });
  }, [org, load]);

  const create = async () => {
    try {
      const s = await post<Session>(base, {});
      navigate(`/o/${org}/p/${project}/s/${s.id}`);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const roots = (sessions ?? []).filter((s) => !s.parentID || !sessions!.some((p) => p.id === s.parentID));
  const children = (id: string) => (sessions ?? []).filter((s) => s.parentID === id);
  const act = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
      load();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const row = (s: Session, child = false) => (
    <li key={s.id} className={`sessionrow ${s.id === current ? "current" : ""} ${child ? "child" : ""}`}>
      <Link to={`/o/${org}/p/${project}/s/${s.id}`} className="sessionlink">
        <span className={`status status-${s.status.type}`} title={String(s.status.type)} aria-label={`status ${s.status.type}`} />
        <span className="title">{s.title || "Untitled"}</span>
        <time className="muted" dateTime={new Date(s.time.updated).toISOString()}>{ago(s.time.updated)}</time>
      </Link>
      <span className="rowactions">
        <button className="icon" title="Archive" aria-label={`Archive ${s.title || "session"}`} onClick={() => act(() => post(`${base}${s.id}/archive/`))}>⤓</button>
        <button
          className="icon danger"
          title="Delete"
          aria-label={`Delete ${s.title || "session"}`}
          onClick={() => confirm(`Delete "${s.title || "Untitled"}" and its messages?`) && act(() => api("DELETE", `${base}${s.id}/`))}
        >
          ✕
        </button>
      </span>
      {children(s.id).length > 0 && <ul>{children(s.id).map((c) => row(c, true))}</ul>}
    </li>
  );
  return (
    <nav className="sidebar" aria-label="Sessions">
      <div className="sidehead">
        <Link to={`/o/${org}`} className="muted small">← {props.projectInfo?.name ?? "Projects"}</Link>
        <span className="sideactions">
          <Link to={`/o/${org}/p/${project}/settings`} className="small" label="Project settings">Settings</Link>
          <button onClick={create}>New session</button>
        </span>
      </div>
      <label className="search">
        <span className="sr-only">Search sessions by title</span>
        <input type="search" placeholder="Search titles" value={search} onChange={(e) => setSearch(e.target.value)} />
      </label>
      {error && <p className="error" role="alert">{error}</p>}
      {sessions === null && !error && <p className="muted" role="status">Loading sessions…</p>}
      {sessions?.length === 0 && <p className="empty">{search ? "No session matches." : "No sessions yet."}</p>}
      <ul className="sessions">{roots.map((s) => row(s))}</ul>
    </nav>
  );
}

export function ago(ms: number): string {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return "now";
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}
