// The prompt box. `@` offers the workspace's files and folders (the server searches the session's
// sandbox); a picked one is sent as a file part, which the server reads for the prompt, as OpenCode's
// TUI does. A pasted or dropped image or PDF is sent with the prompt (the model sees it if it takes them).
import { useEffect, useRef, useState } from "react";
import { get, post, type Agent, type PromptOutput } from "../api/client";

// Django refuses request bodies over 2.5 MB: attachments (base64 adds a third) stay under it.
const MAX_ATTACHED_BYTES = 1_500_000;
const MENTION = /(^|\s)@([^\s@]*)$/;

type Attachment = { name: string; mime: string; url: string; size: number };
type Suggest = { query: string; items: string[]; index: number };

function fileParts(text: string, mentions: string[], attachments: Attachment[]) {
  const picked = mentions.filter((path) => text.includes(`@${path}`));
  return [
    ...[...new Set(picked)].map((path) => ({
      type: "file",
      mime: path.endsWith("/") ? "application/x-directory" : "text/plain",
      filename: path,
      url: "file:///workspace/" + path.replace(/\/$/, "").split("/").map(encodeURIComponent).join("/"),
    })),
    ...attachments.map((a) => ({ type: "file", mime: a.mime, filename: a.name, url: a.url })),
  ];
}

function readAsDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("The file could not be read."));
    reader.readAsDataURL(file);
  });
}

export function Composer(props: {
  base: string;
  busy: boolean;
  agents: Agent[];
  agent: string;
  model: string;
  models: string[];
  onSent: (messageId: string, queued: boolean) => void;
}) {
  const [text, setText] = useState("");
  const [agent, setAgent] = useState(props.agent);
  const [model, setModel] = useState(props.model);
  const [error, setError] = useState("");
  const [sending, setSending] = useState(false);
  const [mentions, setMentions] = useState<string[]>([]);
  const [attachments, setAttachments] = useState<Attachment[]>([]);
  const [suggest, setSuggest] = useState<Suggest | null>(null);
  const box = useRef<HTMLTextAreaElement>(null);
  const asked = useRef(0); // the latest search: an older answer arriving late is dropped
  const primary = props.agents.filter((a) => a.mode !== "subagent");

  const lookUp = (value: string, caret: number) => {
    const match = MENTION.exec(value.slice(0, caret));
    if (!match) {
      setSuggest(null);
      return;
    }
    const query = match[2];
    const ticket = ++asked.current;
    window.setTimeout(() => {
      if (ticket !== asked.current) return;
      get<string[]>(`${props.base}workspace/find/?limit=8&query=${encodeURIComponent(query)}`)
        .then((items) => {
          if (ticket === asked.current) setSuggest(items.length ? { query, items, index: 0 } : null);
        })
        .catch(() => ticket === asked.current && setSuggest(null));
    }, 120);
  };
  useEffect(() => () => void (asked.current += 1), []);

  const pick = (path: string) => {
    const el = box.current;
    const caret = el?.selectionStart ?? text.length;
    const before = text.slice(0, caret).replace(MENTION, (_m, lead: string) => `${lead}@${path} `);
    const next = before + text.slice(caret);
    setText(next);
    setMentions((m) => [...m, path]);
    setSuggest(null);
    asked.current += 1;
    requestAnimationFrame(() => {
      el?.focus();
      el?.setSelectionRange(before.length, before.length);
    });
  };

  const attach = async (files: File[]) => {
    for (const file of files) {
      if (!file.type.startsWith("image/") && file.type !== "application/pdf") continue;
      const total = attachments.reduce((n, a) => n + a.size, 0) + file.size;
      if (total > MAX_ATTACHED_BYTES) {
        setError(`${file.name || "The file"} is too large to attach: at most 1.5 MB in all.`);
        continue;
      }
      const url = await readAsDataUrl(file);
      const name = file.name || `pasted.${file.type.split("/")[1] ?? "bin"}`;
      setAttachments((list) => [...list, { name, mime: file.type, url, size: file.size }]);
    }
  };

  const send = async () => {
    if (!text.trim() || sending) return;
    setSending(true);
    setError("");
    try {
      const parts = [{ type: "text", text }, ...fileParts(text, mentions, attachments)];
      const body: Record<string, unknown> = { parts, agent };
      if (model.includes("/")) body.model = model;
      const out = await post<PromptOutput>(`${props.base}prompt/`, body);
      setText("");
      setMentions([]);
      setAttachments([]);
      props.onSent(out.message, out.queued);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setSending(false);
    }
  };

  const onKeyDown = (e: React.KeyboardEvent<HTMLTextAreaElement>) => {
    if (suggest) {
      const n = suggest.items.length;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        setSuggest({ ...suggest, index: (suggest.index + (e.key === "ArrowDown" ? 1 : n - 1)) % n });
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        pick(suggest.items[suggest.index]);
        return;
      }
      if (e.key === "Escape") {
        e.preventDefault();
        setSuggest(null);
        return;
      }
    }
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };

  return (
    <form
      className="composer"
      aria-label="Message the agent"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        e.preventDefault();
        void attach([...e.dataTransfer.files]);
      }}
    >
      {attachments.length > 0 && (
        <ul className="attachments" aria-label="Attached files">
          {attachments.map((a, i) => (
            <li key={i} className="chip">
              {a.name}
              <button type="button" aria-label={`Remove ${a.name}`} onClick={() => setAttachments((l) => l.filter((_x, j) => j !== i))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <label className="sr-only" htmlFor="prompt">Message</label>
      <div className="promptwrap">
        <textarea
          id="prompt"
          ref={box}
          value={text}
          placeholder={props.busy ? "The agent is working — a message now is queued for its next step" : "Ask the agent… (@ names a file; Enter sends, Shift+Enter for a new line)"}
          onChange={(e) => {
            setText(e.target.value);
            lookUp(e.target.value, e.target.selectionStart);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => window.setTimeout(() => setSuggest(null), 150)}
          onPaste={(e) => {
            const files = [...e.clipboardData.files];
            if (files.length) {
              e.preventDefault();
              void attach(files);
            }
          }}
          rows={2}
          aria-controls={suggest ? "mention-list" : undefined}
          aria-autocomplete="list"
        />
        {suggest && (
          <ul id="mention-list" className="mentions" role="listbox" aria-label="Files">
            {suggest.items.map((path, i) => (
              <li
                key={path}
                role="option"
                aria-selected={i === suggest.index}
                className={i === suggest.index ? "active" : ""}
                onMouseDown={(e) => {
                  e.preventDefault();
                  pick(path);
                }}
              >
                {path}
              </li>
            ))}
          </ul>
        )}
      </div>
      <div className="composerbar">
        <label>
          <span className="sr-only">Agent</span>
          <select value={agent} onChange={(e) => setAgent(e.target.value)} aria-label="Agent">
            {(primary.length ? primary : [{ name: agent, mode: "primary" }]).map((a) => (
              <option key={a.name} value={a.name}>{a.name}</option>
            ))}
          </select>
        </label>
        <label className="modelpick">
          <span className="sr-only">Model</span>
          <input value={model} onChange={(e) => setModel(e.target.value)} aria-label="Model" placeholder="provider/model" list="models" />
          <datalist id="models" data-testid="model-choices">
            {[...new Set([props.model, ...props.models].filter(Boolean))].map((m) => <option key={m} value={m} />)}
          </datalist>
        </label>
        <span className="spacer" />
        {error && <span className="error" role="alert">{error}</span>}
        {props.busy && (
          <button type="button" className="danger" onClick={() => post(`${props.base}abort/`).catch((e) => setError(e.message))}>
            Stop
          </button>
        )}
        <button type="submit" disabled={!text.trim() || sending}>{props.busy ? "Queue" : "Send"}</button>
      </div>
    </form>
  );
}
