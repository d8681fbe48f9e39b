import { lazy, Suspense, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import {
  ApiError, get, getAll, sessionPath,
  type Agent, type Credential, type EventPage, type MessageOut, type PermissionRequest, type Project, type QuestionRequest, type Session,
  type SessionDetail, type Todo,
} from "../api/client";
import { Conversation } from "../api/conversation";
import { SessionStream, type StreamState } from "../api/stream";
import { Link } from "../router";
import { Composer } from "./Composer";
import { errorText, MessageRow } from "../parts/MessageRow";
import { fmtTokens } from "../parts/format";
import { PermissionCard } from "../parts/PermissionCard";
import { QuestionCard } from "../parts/QuestionCard";
import { Changes } from "../parts/Changes";
import { Files } from "../parts/Files";
import { Repository } from "../parts/Repository";
import { McpServerNames } from "../parts/McpCard";

const Terminal = lazy(() => import("../parts/Terminal"));

export function SessionView(props: { org: string; project: number; sessionId: string; tab?: string; projectInfo: Project | null }) {
  const { org, project, sessionId } = props;
  const base = sessionPath(org, project, sessionId);
  const convo = useMemo(() => new Conversation(), [sessionId]);
  useSyncExternalStore(convo.subscribe, convo.snapshot);
  const [session, setSession] = useState<Session | null>(null);
  const [agents, setAgents] = useState<Agent[]>([]);
  const [models, setModels] = useState<string[]>([]);
  const [stream, setStream] = useState<StreamState>("connecting");
  const [failure, setFailure] = useState<string>("");
  const [queued, setQueued] = useState<Set<string>>(new Set());
  const mcpKey = Object.keys(props.projectInfo?.mcp ?? {}).join("\n");
  const mcpServers = useMemo(() => (mcpKey ? mcpKey.split("\n") : []), [mcpKey]);

  useEffect(() => {
    let live: SessionStream | null = null;
    let cancelled = false;
    (async () => {
      try {
        // The cursor first, then the snapshot: the stream replays from the cursor, and replaying an event
        // the snapshot already holds is a no-op (everything is keyed by id).
        const [info, cursor] = await Promise.all([
          get<SessionDetail>(base),
          get<EventPage>(`${base}events/?after=999999999999&limit=1`),
        ]);
        const [messages, todos, permissions, questions] = await Promise.all([
          getAll<MessageOut>(`${base}messages/`),
          get<Todo[]>(`${base}todos/`),
          get<PermissionRequest[]>(`${base}permissions/`),
          get<QuestionRequest[]>(`${base}questions/`),
        ]);
        if (cancelled) return;
        setSession(info);
        convo.title = info.title;
        convo.status = info.status as Conversation["status"];
        // The latest notice as stored: one the stream replays after the cursor replaces it.
        convo.notice = info.notice?.message ?? null;
        convo.load(messages, todos, permissions, questions);
        live = new SessionStream(sessionId, cursor.last_seq, (f) => convo.apply(f), setStream);
        (window as unknown as { hangarStream?: SessionStream }).hangarStream = live;
      } catch (e) {
        if (!cancelled) setFailure(e instanceof ApiError && e.status === 404 ? "notfound" : (e as Error).message);
      }
    })();
    get<Agent[]>(`/api/orgs/${org}/projects/${project}/agents/`).then(setAgents).catch(() => undefined);
    // The picker offers the models the org's credentials (and this member's own) name.
    get<Credential[]>(`/api/orgs/${org}/credentials/`).then((creds) => setModels(modelChoices(creds))).catch(() => undefined);
    return () => {
      cancelled = true;
      live?.close();
    };
  }, [base, convo, org, project, sessionId]);

  const messages = convo.list();
  const busy = convo.status.type !== "idle";
  // A queued message stays marked until an assistant message after it exists or the run ends.
  useEffect(() => {
    if (queued.size === 0) return;
    const lastAssistant = [...messages].reverse().find((m) => m.info.role === "assistant")?.info.id ?? "";
    const still = new Set([...queued].filter((id) => busy && id > lastAssistant));
    if (still.size !== queued.size) setQueued(still);
  });

  if (failure === "notfound" || stream === "denied") {
    return (
      <div className="empty center" role="alert">
        <h2>Session not found</h2>
        <p>It does not exist, or it belongs to an organisation you are not in.</p>
        <Link to={`/o/${org}/p/${project}`}>Back to the sessions</Link>
      </div>
    );
  }
  if (failure) return <p className="error center" role="alert">{failure}</p>;
  if (!session) return <p className="muted center" role="status">Loading session…</p>;

  const totals = convo.totals();
  const tab = props.tab ?? "chat";
  const tabLink = (name: string, label: string) => (
    <Link to={`/o/${org}/p/${project}/s/${sessionId}${name === "chat" ? "" : "/" + name}`} className={`tab ${tab === name ? "active" : ""}`}>
      {label}
    </Link>
  );
  const pending = [...convo.permissions.values()];
  const asked = [...convo.questions.values()];
  return (
    <div className="session">
      <header className="sessionhead">
        <Link to={`/o/${org}/p/${project}`} className="back">←<span className="sr-only"> Sessions</span></Link>
        <h1 title={convo.title || session.title}>{convo.title || session.title || "Untitled"}</h1>
        <span className={`badge status-${convo.status.type}`} data-testid="session-status">
          {convo.status.type}
          {convo.status.type === "retry" && convo.status.message ? `: ${convo.status.message}` : ""}
        </span>
        <span className="muted small totals" data-testid="totals">
          {fmtTokens(totals.input + totals.output)} tokens · ${totals.cost.toFixed(4)}
        </span>
        <nav className="tabs" aria-label="Session views">
          {tabLink("chat", "Conversation")}
          {tabLink("changes", "Changes")}
          {tabLink("files", "Files")}
          {tabLink("terminal", "Terminal")}
        </nav>
      </header>
      {stream === "reconnecting" && (
        <div className="banner warn" role="status" data-testid="reconnecting">Connection lost — reconnecting…</div>
      )}
      {pending.length + asked.length > 0 && tab !== "chat" && (
        <div className="banner ask" role="alert">
          The agent is waiting for {pending.length ? "your permission" : "your answer"}.{" "}
          <Link to={`/o/${org}/p/${project}/s/${sessionId}`}>Answer it</Link>
        </div>
      )}
      {tab === "chat" && (
        <>
          <McpServerNames.Provider value={mcpServers}>
            <Transcript convo={convo} queued={queued} waiting={waitingCalls(pending)} />
          </McpServerNames.Provider>
          {convo.error && !answeredWith(convo, convo.error) && <p className="error" role="alert">{convo.error}</p>}
          {convo.notice && <p className="muted small" role="status" data-testid="session-notice">{convo.notice}</p>}
          {pending.map((p) => <PermissionCard key={p.id} base={base} request={p} />)}
          {asked.map((q) => <QuestionCard key={q.id} base={base} request={q} />)}
          {convo.todos.length > 0 && <Todos todos={convo.todos} />}
          <Composer
            base={base}
            busy={busy}
            agents={agents}
            agent={session.agent || props.projectInfo?.default_agent || "build"}
            model={modelString(session.model) || props.projectInfo?.default_model || ""}
            models={models}
            onSent={(id, wasQueued) => wasQueued && setQueued((q) => new Set(q).add(id))}
          />
        </>
      )}
      {tab === "changes" && (
        <>
          <Repository base={base} />
          <Changes convo={convo} />
        </>
      )}
      {tab === "files" && <Files base={base} />}
      {tab === "terminal" && (
        <Suspense fallback={<p className="muted">Loading terminal…</p>}>
          <Terminal sessionId={sessionId} />
        </Suspense>
      )}
    </div>
  );
}

let waitingKey = "";
let waitingSet: ReadonlySet<string> = new Set();

/** The call ids of the tool calls parked on these permission requests (the same set while they stay the
 * same: the transcript's rows are memoised on it). */
function waitingCalls(pending: PermissionRequest[]): ReadonlySet<string> {
  const ids = pending.map((p) => String((p.tool as { callID?: string } | undefined)?.callID ?? "")).filter(Boolean);
  const key = ids.join(",");
  if (key !== waitingKey) [waitingKey, waitingSet] = [key, new Set(ids)];
  return waitingSet;
}

/** Whether the transcript already shows this error as a failed turn's answer (told once, not twice). */
function answeredWith(convo: Conversation, error: string): boolean {
  return convo.list().some((m) => m.info.error && errorText(m.info.error) === error);
}

function Transcript({ convo, queued, waiting }: { convo: Conversation; queued: Set<string>; waiting: ReadonlySet<string> }) {
  const messages = convo.list();
  const end = useRef<HTMLDivElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  useEffect(() => {
    if (stick.current) end.current?.scrollIntoView({ block: "end" });
  });
  if (messages.length === 0) {
    return <div className="transcript empty">Say what you want done. The agent works in this session's sandbox.</div>;
  }
  return (
    <div
      className="transcript"
      ref={box}
      role="log"
      aria-label="Conversation"
      tabIndex={0}
      onScroll={(e) => {
        const el = e.currentTarget;
        stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
      }}
    >
      {messages.map((m) => <MessageRow key={m.info.id} message={m} queued={queued.has(m.info.id)} waiting={waiting} />)}
      <div ref={end} />
    </div>
  );
}

function Todos({ todos }: { todos: Todo[] }) {
  const done = todos.filter((t) => t.status === "completed").length;
  return (
    <details className="todos" open>
      <summary>Todos {done}/{todos.length}</summary>
      <ul>
        {todos.map((t, i) => (
          <li key={i} className={`todo todo-${t.status}`}>
            <input type="checkbox" checked={t.status === "completed"} readOnly aria-label={t.content} />
            <span>{t.content}</span>
            {t.status === "in_progress" && <span className="badge">in progress</span>}
          </li>
        ))}
      </ul>
    </details>
  );
}

export function modelString(model: unknown): string {
  const m = model as { providerID?: string; id?: string; modelID?: string } | undefined;
  return m?.providerID ? `${m.providerID}/${m.id ?? m.modelID}` : "";
}

/** "provider/model" for every model a credential lists, each once, in order. */
function modelChoices(creds: Credential[]): string[] {
  return [...new Set(creds.flatMap((c) => c.models.map((m) => `${c.provider}/${m}`)))];
}
