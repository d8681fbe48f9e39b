// The platform operator's sandbox hosts (superusers only; no org sees them): each host's state, labels,
// capacity, what is free, its live sandboxes and last heartbeat, with Drain and Activate. Draining takes a
// host out of placement: its idle sandboxes are hibernated, busy ones finish first (docs/scale-out.md).
import { post, type SandboxHost } from "../../api/client";
import { ErrorLine, useAction, useLoad } from "./common";

const STATE_TEXT: Record<SandboxHost["state"], string> = {
  active: "takes new sessions",
  draining: "no new sessions; its idle sandboxes are being hibernated",
  drained: "no new sessions, nothing live",
  lost: "its heartbeat stopped",
};

const gb = (mb: number) => (mb / 1024).toFixed(mb < 10240 ? 1 : 0);
const freeOf = (free: number, total: number) => `${gb(free)} / ${gb(total)} GB`;

function age(seconds: number | null): string {
  if (seconds === null) return "never";
  if (seconds < 90) return `${Math.round(seconds)} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

export function Hosts() {
  const { data, error, reload } = useLoad<SandboxHost[]>("/api/operator/hosts/");
  const [busy, actionError, run] = useAction();
  const change = (host: SandboxHost, to: "drain" | "activate") =>
    run(() => post(`/api/operator/hosts/${encodeURIComponent(host.name)}/${to}`)).then(reload);
  return (
    <section className="card" aria-labelledby="hosts-h">
      <h2 id="hosts-h">Sandbox hosts</h2>
      <p className="muted small">
        The platform's machines, visible to its operators only. Draining a host sends no new session there;
        its idle sandboxes are hibernated and busy ones finish first. Activating it takes new sessions again.
      </p>
      <ErrorLine error={error || actionError} />
      {data?.length === 0 && <p className="muted">No sandbox host has registered.</p>}
      {!!data?.length && (
        <div className="tablewrap" tabIndex={0}>
          <table className="hosts" aria-label="Sandbox hosts">
            <thead>
              <tr>
                <th>Host</th><th>State</th><th>Labels</th><th className="num">CPUs</th><th className="num">Memory free / total</th>
                <th className="num">Disk free / total</th><th className="num">Live sandboxes</th><th>Last heartbeat</th>
                <th><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {data.map((h) => (
                <tr key={h.name} data-testid="host">
                  <td className="mono">{h.name}</td>
                  <td><span className={`badge host-${h.state}`} title={STATE_TEXT[h.state]} data-testid="host-state">{h.state}</span></td>
                  <td>{h.labels.length ? h.labels.join(", ") : <span className="muted">none</span>}</td>
                  <td className="num">{h.cpus}</td>
                  <td className="num">{freeOf(h.free_memory_mb, h.memory_mb)}</td>
                  <td className="num">{freeOf(h.free_disk_mb, h.disk_mb)}</td>
                  <td className="num">{h.live_sandboxes}</td>
                  <td className="muted" title={h.heartbeat_at ?? undefined}>{age(h.heartbeat_age_s)}</td>
                  <td>
                    <span className="rowbuttons">
                      {h.state !== "draining" && h.state !== "drained" && (
                        <button className="ghost" disabled={busy} onClick={() => change(h, "drain")} aria-label={`Drain ${h.name}`}>Drain</button>
                      )}
                      {h.state !== "active" && (
                        <button className="ghost" disabled={busy} onClick={() => change(h, "activate")} aria-label={`Activate ${h.name}`}>Activate</button>
                      )}
                    </span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="rowbuttons" style={{ marginTop: 12 }}>
        <button type="button" className="secondary" onClick={reload}>Refresh</button>
      </div>
    </section>
  );
}
