// Signed webhooks, both ways: endpoints that receive the org's events (Standard Webhooks signatures,
// retried, disabled after sustained failure), triggers that start or prompt a session from a signed
// call, and the delivery log with a replay button. Secrets are shown once, when made.
import { useState } from "react";
import {
  api, post, type Project, type WebhookDelivery, type WebhookEndpoint, type WebhookEndpointCreated,
  type WebhookTrigger, type WebhookTriggerCreated,
} from "../../api/client";
import { ErrorLine, useAction, useLoad } from "./common";

const EVENTS = [
  "session.created", "session.idle", "session.error", "permission.asked", "question.asked", "push.done",
  "budget.reached",
];

function Secret({ label, secret, extra, onDone }: { label: string; secret: string; extra?: string; onDone: () => void }) {
  return (
    <div className="banner ok" role="status">
      <p>{label}: copy the secret now, it is shown only once.</p>
      {extra && <p className="mono small">{extra}</p>}
      <code className="secret" data-testid="new-secret">{secret}</code>
      <button type="button" className="ghost" onClick={onDone}>Done</button>
    </div>
  );
}

export function Webhooks({ org }: { org: string }) {
  const base = `/api/orgs/${org}/webhooks/`;
  const endpoints = useLoad<WebhookEndpoint[]>(`${base}endpoints/`);
  return (
    <>
      <Endpoints base={base} list={endpoints.data} error={endpoints.error} reload={endpoints.reload} />
      <Triggers org={org} base={base} />
      <Deliveries base={base} endpoints={endpoints.data ?? []} reloadEndpoints={endpoints.reload} />
    </>
  );
}

function Endpoints(props: { base: string; list: WebhookEndpoint[] | null; error: string; reload: () => void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<Set<string>>(new Set(["session.idle"]));
  const [created, setCreated] = useState<WebhookEndpointCreated | null>(null);
  const [busy, error, run] = useAction();
  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    await run(async () => {
      setCreated(await post<WebhookEndpointCreated>(`${props.base}endpoints/`, { url, event_types: [...events] }));
      setUrl("");
      props.reload();
    });
  };
  const toggle = (ep: WebhookEndpoint) =>
    run(() => api("PATCH", `${props.base}endpoints/${ep.id}`, { enabled: !ep.enabled }).then(props.reload));
  return (
    <section className="card" aria-labelledby="endpoints-h">
      <h2 id="endpoints-h">Outgoing endpoints</h2>
      <ErrorLine error={props.error || error} />
      {created && <Secret label={`Endpoint ${created.url}`} secret={created.secret} onDone={() => setCreated(null)} />}
      <div className="tablewrap">
        <table>
          <thead><tr><th>URL</th><th>Events</th><th>State</th><th><span className="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {props.list?.map((ep) => (
              <tr key={ep.id}>
                <td className="mono">{ep.url}</td>
                <td>{ep.event_types.join(", ")}</td>
                <td>{ep.enabled ? "enabled" : `disabled${ep.disabled_reason ? `: ${ep.disabled_reason}` : ""}`}</td>
                <td><button type="button" className="ghost" disabled={busy} onClick={() => toggle(ep)}>{ep.enabled ? "Disable" : "Enable"}</button></td>
              </tr>
            ))}
          </tbody>
        </table>
        {props.list?.length === 0 && <p className="empty">No endpoints: nothing is sent.</p>}
      </div>
      <form className="inline" onSubmit={create} aria-label="New endpoint">
        <label className="grow">Endpoint URL<input value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://ci.example.com/hooks/hangar" /></label>
        <fieldset className="events">
          <legend>Events</legend>
          {EVENTS.map((name) => (
            <label key={name} className="check">
              <input
                type="checkbox"
                checked={events.has(name)}
                onChange={() => setEvents((now) => {
                  const next = new Set(now);
                  if (!next.delete(name)) next.add(name);
                  return next;
                })}
              />
              {name}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={busy || !url || events.size === 0}>Add endpoint</button>
      </form>
    </section>
  );
}

function Triggers({ org, base }: { org: string; base: string }) {
  const triggers = useLoad<WebhookTrigger[]>(`${base}triggers/`);
  const projects = useLoad<Project[]>(`/api/orgs/${org}/projects/`);
  const [name, setName] = useState("");
  const [project, setProject] = useState("");
  const [template, setTemplate] = useState("CI failed on {{ body.branch }}: {{ body.log }}. Find the cause and fix it.");
  const [created, setCreated] = useState<WebhookTriggerCreated | null>(null);
  const [busy, error, run] = useAction();
  const chosen = project || String(projects.data?.[0]?.id ?? "");
  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    await run(async () => {
      setCreated(await post<WebhookTriggerCreated>(`${base}triggers/`, { name, project: Number(chosen), prompt_template: template }));
      setName("");
      triggers.reload();
    });
  };
  const remove = (t: WebhookTrigger) => run(() => api("DELETE", `${base}triggers/${t.id}`).then(triggers.reload));
  return (
    <section className="card" aria-labelledby="triggers-h">
      <h2 id="triggers-h">Incoming triggers</h2>
      <ErrorLine error={triggers.error || error} />
      {created && <Secret label={`Trigger ${created.name}`} secret={created.secret} extra={created.url} onDone={() => setCreated(null)} />}
      <div className="tablewrap">
        <table>
          <thead><tr><th>Name</th><th>Call this URL</th><th>Prompt</th><th><span className="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {triggers.data?.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td className="mono small">{t.url}</td>
                <td className="small">{t.prompt_template}</td>
                <td><button type="button" className="ghost danger" disabled={busy} onClick={() => remove(t)}>Delete</button></td>
              </tr>
            ))}
          </tbody>
        </table>
        {triggers.data?.length === 0 && <p className="empty">No triggers: nothing outside starts sessions.</p>}
      </div>
      <form className="inline" onSubmit={create} aria-label="New trigger">
        <label>Name<input value={name} onChange={(e) => setName(e.target.value)} placeholder="ci-failures" /></label>
        <label>Project
          <select value={chosen} onChange={(e) => setProject(e.target.value)}>
            {projects.data?.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <label className="grow">Prompt template<input value={template} onChange={(e) => setTemplate(e.target.value)} /></label>
        <button type="submit" disabled={busy || !name || !chosen || !template.trim()}>Add trigger</button>
      </form>
    </section>
  );
}

function Deliveries(props: { base: string; endpoints: WebhookEndpoint[]; reloadEndpoints: () => void }) {
  const { base, endpoints } = props;
  const log = useLoad<WebhookDelivery[]>(`${base}deliveries/`);
  const [busy, error, run] = useAction();
  const urlOf = (id: number) => endpoints.find((e) => e.id === id)?.url ?? `#${id}`;
  const replay = (d: WebhookDelivery) => run(() => post(`${base}deliveries/${d.id}/replay`).then(log.reload));
  return (
    <section className="card" aria-labelledby="deliveries-h">
      <h2 id="deliveries-h">Delivery log</h2>
      <ErrorLine error={log.error || error} />
      <div className="tablewrap">
        <table>
          <thead><tr><th>Event</th><th>Endpoint</th><th>Status</th><th>Attempts</th><th>Last answer</th><th><span className="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {log.data?.map((d) => {
              const last = d.attempt_log[d.attempt_log.length - 1];
              return (
                <tr key={d.id} data-testid="delivery">
                  <td>{d.event_type}</td>
                  <td className="mono small">{urlOf(d.endpoint)}</td>
                  <td data-testid="delivery-status">{d.status}</td>
                  <td>{d.attempts}</td>
                  <td className="small">{last ? `${last.response_status ?? last.error} · ${Math.round(last.duration_ms)} ms` : "—"}</td>
                  <td><button type="button" className="ghost" disabled={busy} onClick={() => replay(d)}>Replay</button></td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {log.data?.length === 0 && <p className="empty">Nothing delivered yet.</p>}
      </div>
      <button type="button" className="ghost" onClick={() => { log.reload(); props.reloadEndpoints(); }}>Refresh</button>
    </section>
  );
}
