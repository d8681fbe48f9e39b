import { useEffect, useState } from "react";
import type { Health } from "../api/client";

// The platform's readiness, model included, polled while anything is not ready (deploy/up.sh's bundled
// model takes minutes to build on first run).
export function ModelReadiness() {
  const [health, setHealth] = useState<Health | null>(null);
  useEffect(() => {
    let stop = false;
    let timer: number | undefined;
    const poll = async () => {
      let next = 30000;
      try {
        const h = await fetch("/api/health").then((r) => r.json() as Promise<Health>);
        if (!stop) setHealth(h);
        if (h.status !== "ok") next = 5000;
      } catch {
        next = 5000;
      }
      if (!stop) timer = window.setTimeout(poll, next);
    };
    poll();
    return () => {
      stop = true;
      window.clearTimeout(timer);
    };
  }, []);
  if (!health) return null;
  // Absent for a signed-out visitor, who gets the liveness only.
  const checks: Record<string, { status: string; detail?: string }> = health.checks ?? {};
  const model = checks.model;
  const notReady = Object.entries(checks).filter(([, c]) => c.status !== "ok");
  const label = model
    ? model.status === "ok" ? "Model ready" : `Model: ${model.detail ?? "not ready"}`
    : notReady.length ? `Degraded: ${notReady.map(([k]) => k).join(", ")}` : "Ready";
  const ok = notReady.length === 0;
  return (
    <span className={`readiness ${ok ? "ok" : "warn"}`} role="status" title={notReady.map(([k, c]) => `${k}: ${c.detail ?? c.status}`).join("\n")}>
      <span className="dot" aria-hidden="true" /> {label}
    </span>
  );
}
