// A session's live event stream with resume: connect with ?after=<last seq>, apply each stored event
// once (seq must be exactly last + 1; anything at or below is a replay we already have), pass ephemeral
// frames (token deltas) through without moving the cursor, and reconnect after a drop from where we were.

import { post } from "./client";

// A WebSocket URL on this site carrying a fresh one-use ticket (POST /api/auth/ws-ticket, acting as this
// browser's session): credentials never ride in a WebSocket URL, and a ticket is good once, for seconds.
export async function socketUrl(path: string): Promise<string> {
  const { ticket } = await post<{ ticket: string }>("/api/auth/ws-ticket");
  const proto = location.protocol === "https:" ? "wss" : "ws";
  return `${proto}://${location.host}${path}${path.includes("?") ? "&" : "?"}ticket=${encodeURIComponent(ticket)}`;
}

export type Frame = {
  seq: number | null;
  type: string;
  payload: Record<string, unknown>;
  session: string;
  ephemeral?: boolean;
};

export type StreamState = "connecting" | "live" | "reconnecting" | "gone" | "denied";

export class SessionStream {
  private socket: WebSocket | null = null;
  private closed = false;
  private attempt = 0;
  private timer: number | undefined;
  private purged = false;

  constructor(
    private sessionId: string,
    public last: number,
    private onFrame: (frame: Frame) => void,
    private onState: (state: StreamState) => void,
  ) {
    this.open();
  }

  private open(): void {
    this.onState(this.attempt === 0 ? "connecting" : "reconnecting");
    socketUrl(`/ws/sessions/${encodeURIComponent(this.sessionId)}/?after=${this.last}`).then(
      (url) => this.connect(url),
      () => this.retry(),
    );
  }

  private retry(): void {
    if (this.closed) return;
    this.attempt += 1;
    this.onState("reconnecting");
    const delay = Math.min(250 * 2 ** (this.attempt - 1), 5000);
    this.timer = window.setTimeout(() => this.open(), delay);
  }

  private connect(url: string): void {
    if (this.closed) return;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this.onState("live");
    };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data) as Frame;
      // The retention policy deleted events after our cursor: the server closes next (4410), and only a
      // fresh snapshot (reload) resumes without a gap.
      if (frame.type === "stream.events_purged") {
        this.purged = true;
        return;
      }
      if (frame.seq !== null && frame.seq !== undefined) {
        if (frame.seq <= this.last) return; // a replay of what we already applied
        this.last = frame.seq;
      }
      this.onFrame(frame);
    };
    socket.onclose = (event) => {
      if (this.socket !== socket || this.closed) return;
      if (event.code === 4404 || event.code === 4401) return this.onState("denied");
      if (event.code === 4410 && this.purged) return location.reload();
      if (event.code === 4410) return this.onState("gone");
      this.retry();
    };
  }

  close(): void {
    this.closed = true;
    window.clearTimeout(this.timer);
    this.socket?.close();
  }
}

// The org's stream (session-list changes, requests waiting for a person; live only), one socket per org
// shared by every listener in the page. A drop reconnects and announces `stream.open`: listeners refetch.
const orgSockets = new Map<string, { listeners: Set<(frame: Frame) => void>; stop: () => void }>();

export function orgStream(org: string, onFrame: (frame: Frame) => void): () => void {
  let shared = orgSockets.get(org);
  if (!shared) {
    const listeners = new Set<(frame: Frame) => void>();
    const emit = (frame: Frame) => listeners.forEach((fn) => fn(frame));
    shared = { listeners, stop: openOrgSocket(org, emit) };
    orgSockets.set(org, shared);
  }
  const entry = shared;
  entry.listeners.add(onFrame);
  return () => {
    entry.listeners.delete(onFrame);
    if (entry.listeners.size === 0) {
      entry.stop();
      orgSockets.delete(org);
    }
  };
}

function openOrgSocket(org: string, onFrame: (frame: Frame) => void): () => void {
  let socket: WebSocket | null = null;
  let stopped = false;
  let timer: number | undefined;
  const open = () => {
    socketUrl(`/ws/orgs/${encodeURIComponent(org)}/`).then(
      (url) => {
        if (stopped) return;
        const opened = new WebSocket(url);
        socket = opened;
        opened.onmessage = (m) => onFrame(JSON.parse(m.data) as Frame);
        opened.onopen = () => onFrame({ seq: null, type: "stream.open", payload: {}, session: "" });
        opened.onclose = (e) => {
          if (!stopped && e.code !== 4404 && e.code !== 4401) timer = window.setTimeout(open, 1000);
        };
      },
      () => {
        if (!stopped) timer = window.setTimeout(open, 1000);
      },
    );
  };
  open();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
    socket?.close();
  };
}
