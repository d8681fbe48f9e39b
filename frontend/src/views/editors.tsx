// Structured editors for the JSON a project or org holds: permission rules (rows of permission, pattern,
// action), a list of hosts (egress), and agents. Each has an "Advanced (JSON)" view over the same value;
// text there that is not JSON is reported through `onInvalid` and not passed on, so a form can refuse to
// save it.
import { useEffect, useId, useState } from "react";

export type Rule = { permission: string; pattern: string; action: string };
export type AgentFields = Record<string, unknown>;

// The permissions the engine asks about (OpenCode's names), offered in the rule rows; a rule naming
// another keeps its name.
const PERMISSIONS = [
  "*", "bash", "edit", "read", "glob", "grep", "list", "task", "webfetch", "websearch", "codesearch",
  "todowrite", "todoread", "question", "skill", "external_directory", "doom_loop",
];
const ACTIONS = ["allow", "ask", "deny"];
const MODES = ["all", "primary", "subagent"];

function Advanced<T>(props: {
  label: string;
  value: T;
  onChange: (value: T) => void;
  onInvalid: (message: string) => void;
  check: (parsed: unknown) => string;
  children: React.ReactNode;
}) {
  const [raw, setRaw] = useState(false);
  const [text, setText] = useState("");
  const id = useId();
  useEffect(() => {
    if (!raw) setText(JSON.stringify(props.value, null, 2));
  }, [props.value, raw]);
  const edit = (next: string) => {
    setText(next);
    let parsed: unknown;
    try {
      parsed = JSON.parse(next);
    } catch (err) {
      props.onInvalid(`${props.label}: not valid JSON (${(err as Error).message})`);
      return;
    }
    const problem = props.check(parsed);
    props.onInvalid(problem ? `${props.label}: ${problem}` : "");
    if (!problem) props.onChange(parsed as T);
  };
  return (
    <fieldset className="editor">
      <legend>{props.label}</legend>
      <div className="editorbar">
        <button type="button" className="ghost small" aria-pressed={raw} aria-controls={id} onClick={() => setRaw(!raw)}>
          {raw ? "Back to rows" : "Advanced (JSON)"}
        </button>
      </div>
      <div id={id}>
        {raw ? (
          <label>
            <span className="sr-only">{props.label} (JSON)</span>
            <textarea className="mono rules" value={text} onChange={(e) => edit(e.target.value)} spellCheck={false} aria-label={`${props.label} (JSON)`} />
          </label>
        ) : (
          props.children
        )}
      </div>
    </fieldset>
  );
}

export function RulesEditor(props: {
  label: string;
  rules: Rule[];
  onChange: (rules: Rule[]) => void;
  onInvalid: (message: string) => void;
}) {
  const { rules, onChange } = props;
  const put = (i: number, patch: Partial<Rule>) => onChange(rules.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const move = (i: number, by: number) => {
    const next = [...rules];
    [next[i], next[i + by]] = [next[i + by], next[i]];
    onChange(next);
  };
  const check = (v: unknown) => (Array.isArray(v) ? "" : "must be a list of {permission, pattern, action}");
  return (
    <Advanced label={props.label} value={rules} onChange={onChange} onInvalid={props.onInvalid} check={check}>
      <p className="muted small">The last rule that matches decides.</p>
      {rules.length === 0 && <p className="muted small">No rules.</p>}
      <ol className="rows">
        {rules.map((rule, i) => (
          <li key={i} className="row" aria-label={`Rule ${i + 1}`}>
            <label>Permission
              <select aria-label="Permission" value={rule.permission} onChange={(e) => put(i, { permission: e.target.value })}>
                {[...new Set([rule.permission, ...PERMISSIONS])].map((p) => <option key={p} value={p}>{p === "*" ? "* (any)" : p}</option>)}
              </select>
            </label>
            <label className="grow">Pattern
              <input value={rule.pattern} onChange={(e) => put(i, { pattern: e.target.value })} className="mono" spellCheck={false} placeholder="*" />
            </label>
            <label>Action
              <select aria-label="Action" value={rule.action} onChange={(e) => put(i, { action: e.target.value })}>
                {[...new Set([rule.action, ...ACTIONS])].map((a) => <option key={a} value={a}>{a}</option>)}
              </select>
            </label>
            <span className="rowbuttons">
              <button type="button" className="icon" aria-label={`Move rule ${i + 1} up`} disabled={i === 0} onClick={() => move(i, -1)}>↑</button>
              <button type="button" className="icon" aria-label={`Move rule ${i + 1} down`} disabled={i === rules.length - 1} onClick={() => move(i, 1)}>↓</button>
              <button type="button" className="icon danger" aria-label={`Remove rule ${i + 1}`} onClick={() => onChange(rules.filter((_, j) => j !== i))}>✕</button>
            </span>
          </li>
        ))}
      </ol>
      <button type="button" className="secondary" onClick={() => onChange([...rules, { permission: "bash", pattern: "*", action: "ask" }])}>Add rule</button>
    </Advanced>
  );
}

export function HostsEditor(props: {
  label: string;
  hosts: string[];
  onChange: (hosts: string[]) => void;
  onInvalid: (message: string) => void;
}) {
  const { hosts, onChange } = props;
  const check = (v: unknown) => (Array.isArray(v) && v.every((h) => typeof h === "string") ? "" : "must be a list of host names");
  return (
    <Advanced label={props.label} value={hosts} onChange={onChange} onInvalid={props.onInvalid} check={check}>
      {hosts.length === 0 && <p className="muted small">No hosts.</p>}
      <ol className="rows">
        {hosts.map((host, i) => (
          <li key={i} className="row">
            <label className="grow">Host {i + 1}
              <input value={host} onChange={(e) => onChange(hosts.map((h, j) => (j === i ? e.target.value : h)))} className="mono" spellCheck={false} placeholder="pypi.org or host:443" />
            </label>
            <button type="button" className="icon danger" aria-label={`Remove host ${i + 1}`} onClick={() => onChange(hosts.filter((_, j) => j !== i))}>✕</button>
          </li>
        ))}
      </ol>
      <button type="button" className="secondary" onClick={() => onChange([...hosts, ""])}>Add host</button>
    </Advanced>
  );
}

// Agents by name. The rows edit the common fields; any other field an agent has (permission, steps,
// temperature, ...) is kept as it is, and editable in the JSON view.
export function AgentsEditor(props: {
  label: string;
  agents: Record<string, AgentFields>;
  onChange: (agents: Record<string, AgentFields>) => void;
  onInvalid: (message: string) => void;
}) {
  const entries = Object.entries(props.agents);
  const emit = (next: [string, AgentFields][]) => props.onChange(Object.fromEntries(next));
  const put = (i: number, key: string, value: string) =>
    emit(entries.map(([n, f], j) => (j === i ? [n, value === "" && key !== "prompt" ? omit(f, key) : { ...f, [key]: value }] : [n, f])));
  const rename = (i: number, name: string) => emit(entries.map(([n, f], j) => (j === i ? [name, f] : [n, f])));
  const check = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? "" : "must be a mapping of agents by name");
  const fresh = () => {
    let n = entries.length + 1;
    while (`agent-${n}` in props.agents) n += 1;
    return `agent-${n}`;
  };
  return (
    <Advanced label={props.label} value={props.agents} onChange={props.onChange} onInvalid={props.onInvalid} check={check}>
      {entries.length === 0 && <p className="muted small">No agents of the project's own.</p>}
      <ol className="rows agents">
        {entries.map(([name, fields], i) => (
          <li key={i} className="agent" aria-label={`Agent ${name}`}>
            <div className="row">
              <label>Name<input value={name} onChange={(e) => rename(i, e.target.value)} spellCheck={false} /></label>
              <label>Mode
                <select aria-label="Mode" value={String(fields.mode ?? "all")} onChange={(e) => put(i, "mode", e.target.value)}>
                  {MODES.map((m) => <option key={m} value={m}>{m}</option>)}
                </select>
              </label>
              <label className="grow">Model<input value={String(fields.model ?? "")} onChange={(e) => put(i, "model", e.target.value)} placeholder="the session's" spellCheck={false} /></label>
              <button type="button" className="ghost danger" aria-label={`Remove agent ${name}`} onClick={() => emit(entries.filter((_, j) => j !== i))}>Remove</button>
            </div>
            <label>Description<input value={String(fields.description ?? "")} onChange={(e) => put(i, "description", e.target.value)} /></label>
            <label>Prompt<textarea className="mono" rows={3} value={String(fields.prompt ?? "")} onChange={(e) => put(i, "prompt", e.target.value)} /></label>
            {Object.keys(omit(fields, "mode", "model", "description", "prompt")).length > 0 && (
              <p className="muted small">Also set: {Object.keys(omit(fields, "mode", "model", "description", "prompt")).join(", ")} (see the JSON view).</p>
            )}
          </li>
        ))}
      </ol>
      <button type="button" className="secondary" onClick={() => emit([...entries, [fresh(), { mode: "subagent", description: "", prompt: "" }]])}>Add agent</button>
    </Advanced>
  );
}

function omit(fields: AgentFields, ...keys: string[]): AgentFields {
  return Object.fromEntries(Object.entries(fields).filter(([k]) => !keys.includes(k)));
}
