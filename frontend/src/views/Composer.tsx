import { useState } from "react";
import { post, type Agent, type PromptOutput } from "../api/client";

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
  const primary = props.agents.filter((a) => a.mode !== "subagent");
  const send = async () => {
    if (!text.trim() || sending) return;
    setSending(true);
    setError("");
    try {
      const body: Record<string, unknown> = { parts: [{ type: "text", text }], agent };
      if (model.includes("/")) body.model = model;
      const out = await post<PromptOutput>(`${props.base}prompt/`, body);
      setText("");
      props.onSent(out.message, out.queued);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setSending(false);
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
    >
      <label className="sr-only" htmlFor="prompt">Message</label>
      <textarea
        id="prompt"
        value={text}
        placeholder={props.busy ? "The agent is working — a message now is queued for its next step" : "Ask the agent… (Enter sends, Shift+Enter for a new line)"}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
        rows={2}
      />
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
