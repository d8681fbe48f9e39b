// Shared bits of the admin console: a loading hook, an error line, and the console's own shapes (the
// console endpoints answer plain objects, so these are written here rather than generated).
import { useCallback, useEffect, useState } from "react";
import { get } from "../../api/client";

export type Rule = { permission: string; pattern: string; action: string };

export function useLoad<T>(path: string | null): { data: T | null; error: string; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState("");
  const reload = useCallback(() => {
    if (!path) return;
    setError("");
    get<T>(path)
      .then(setData)
      .catch((e) => setError((e as Error).message));
  }, [path]);
  useEffect(reload, [reload]);
  return { data, error, reload };
}

export function ErrorLine({ error }: { error: string }) {
  return error ? <p className="error" role="alert">{error}</p> : null;
}

// Runs an async action with a busy flag and an error message; resolves to whether it succeeded.
export function useAction(): [boolean, string, (fn: () => Promise<unknown>) => Promise<boolean>] {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError("");
    try {
      await fn();
      return true;
    } catch (e) {
      setError((e as Error).message);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return [busy, error, run];
}

export const money = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`;
