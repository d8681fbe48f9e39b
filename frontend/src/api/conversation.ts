// The conversation of one session as the app holds it: messages with their parts keyed by id, so that
// applying an event twice (a replay after a reconnect, a snapshot overlapping the stream) changes nothing.
import type { MessageOut, PermissionRequest, QuestionRequest, Todo } from "./client";
import type { Frame } from "./stream";

export type ToolState = {
  status: "pending" | "running" | "completed" | "error";
  input?: Record<string, unknown>;
  output?: string;
  error?: string;
  title?: string;
  metadata?: Record<string, unknown>;
  time?: { start?: number; end?: number };
};

export type Part = {
  id: string;
  messageID: string;
  type: string;
  text?: string;
  tool?: string;
  callID?: string;
  state?: ToolState;
  cost?: number;
  tokens?: { input?: number; output?: number; reasoning?: number; cache?: { read?: number; write?: number } };
  [key: string]: unknown;
};

export type MessageInfo = {
  id: string;
  role: "user" | "assistant";
  time?: { created?: number; completed?: number };
  cost?: number;
  tokens?: Part["tokens"];
  agent?: string;
  modelID?: string;
  error?: { name?: string; data?: { message?: string } };
  [key: string]: unknown;
};

const STAGE: Record<string, number> = { pending: 0, running: 1, completed: 2, error: 2 };

export type Message = { info: MessageInfo; parts: Part[] };
export type Status = { type: string; message?: string; attempt?: number; next?: number };

export class Conversation {
  messages = new Map<string, Message>();
  order: string[] = [];
  status: Status = { type: "idle" };
  todos: Todo[] = [];
  permissions = new Map<string, PermissionRequest>();
  questions = new Map<string, QuestionRequest>();
  private partMessage = new Map<string, string>();
  error: string | null = null;
  /** What the platform told the session about itself (a move off a lost sandbox host): the latest one
   * stored when the session was opened, then each one live. */
  notice: string | null = null;
  title = "";
  version = 0;
  private listeners = new Set<() => void>();

  subscribe = (fn: () => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };
  snapshot = () => this.version;

  private changed(): void {
    this.version += 1;
    for (const fn of this.listeners) fn();
  }

  load(messages: MessageOut[], todos: Todo[], permissions: PermissionRequest[], questions: QuestionRequest[] = []): void {
    for (const m of messages) {
      const info = m.info as MessageInfo;
      this.upsertMessage(info);
      for (const p of m.parts) this.upsertPart(p as Part);
    }
    this.todos = todos;
    for (const p of permissions) this.permissions.set(p.id, p);
    for (const q of questions) this.questions.set(q.id, q);
    this.changed();
  }

  private upsertMessage(info: MessageInfo): Message {
    let message = this.messages.get(info.id);
    if (message) {
      message.info = info;
    } else {
      message = { info, parts: [] };
      this.messages.set(info.id, message);
      this.order.push(info.id);
      if (this.order.length > 1 && this.order[this.order.length - 2] > info.id) this.order.sort();
    }
    return message;
  }

  private upsertPart(part: Part, delta?: string, ephemeral = false): void {
    // Live tool frames may name their part without its message: place them by the part's id.
    const messageID = part.messageID ?? this.partMessage.get(part.id);
    if (!messageID) return;
    part = { ...part, messageID };
    this.partMessage.set(part.id, messageID);
    let message = this.messages.get(part.messageID);
    if (!message) message = this.upsertMessage({ id: part.messageID, role: "assistant" });
    const parts = message.parts.slice();
    const index = parts.findIndex((p) => p.id === part.id);
    if (index >= 0) {
      const old = parts[index];
      // A delta frame carries the text so far; never let a late delta undo a stored, finished part.
      if (delta !== undefined && old.time && (old.time as { end?: number }).end) return;
      // Ephemeral frames (live tool output) travel apart from stored ones and may arrive after the
      // stored final state: they never move a tool part backwards.
      if (ephemeral && STAGE[old.state?.status ?? ""] > STAGE[part.state?.status ?? ""]) return;
      parts[index] = part;
    } else {
      parts.push(part);
      parts.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    }
    // A new array and object per change: message rows are memoised on identity.
    this.messages.set(message.info.id, { info: message.info, parts });
  }

  apply(frame: Frame): void {
    const p = frame.payload as Record<string, any>;
    switch (frame.type) {
      case "message.updated":
        this.upsertMessage(p.info as MessageInfo);
        this.messages.set(p.info.id, { ...this.messages.get(p.info.id)! });
        break;
      case "message.part.updated": {
        const part = p.part as Part;
        if (typeof p.delta === "string") {
          const existing = this.messages.get(part.messageID)?.parts.find((x) => x.id === part.id);
          const text = typeof part.text === "string" ? part.text : (existing?.text ?? "") + p.delta;
          this.upsertPart({ ...part, text }, p.delta, true);
        } else {
          this.upsertPart(part, undefined, frame.ephemeral === true);
        }
        break;
      }
      case "message.part.removed": {
        const message = this.messages.get(p.messageID);
        if (message) this.messages.set(message.info.id, { ...message, parts: message.parts.filter((x) => x.id !== p.partID) });
        break;
      }
      case "message.removed":
        this.messages.delete(p.messageID);
        this.order = this.order.filter((id) => id !== p.messageID);
        break;
      case "session.status":
        this.status = p.status as Status;
        break;
      case "session.updated":
        if (p.info?.title) this.title = p.info.title;
        break;
      case "session.error":
        this.error = p.error?.data?.message || p.error?.name || "The run failed";
        break;
      case "session.notice":
        this.notice = typeof p.message === "string" ? p.message : null;
        break;
      case "todo.updated":
        this.todos = p.todos as Todo[];
        break;
      case "permission.asked":
        this.permissions.set(p.id, p as PermissionRequest);
        break;
      case "permission.replied":
        this.permissions.delete(p.requestID);
        break;
      case "question.asked":
        this.questions.set(p.id, p as QuestionRequest);
        break;
      case "question.replied":
      case "question.rejected":
        this.questions.delete(p.requestID);
        break;
      default:
        return;
    }
    this.changed();
  }

  list(): Message[] {
    return this.order.map((id) => this.messages.get(id)!).filter(Boolean);
  }

  totals(): { cost: number; input: number; output: number } {
    let cost = 0, input = 0, output = 0;
    for (const m of this.messages.values()) {
      if (m.info.role !== "assistant") continue;
      cost += m.info.cost ?? 0;
      input += m.info.tokens?.input ?? 0;
      output += m.info.tokens?.output ?? 0;
    }
    return { cost, input, output };
  }
}
