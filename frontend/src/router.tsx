// A tiny history router: the app has a handful of routes, not worth a dependency.
import { useSyncExternalStore } from "react";

const listeners = new Set<() => void>();
window.addEventListener("popstate", () => listeners.forEach((fn) => fn()));

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  listeners.forEach((fn) => fn());
}

export function usePath(): string {
  return useSyncExternalStore(
    (fn) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    () => location.pathname,
  );
}

export type Route =
  | { name: "login" }
  | { name: "home" }
  | { name: "org"; org: string }
  | { name: "settings"; org: string }
  | { name: "console"; org: string; section?: string }
  | { name: "operator" }
  | { name: "invite"; secret: string }
  | { name: "share"; token: string }
  | { name: "project"; org: string; project: number; session?: string; tab?: string }
  | { name: "projectSettings"; org: string; project: number };

export function match(path: string): Route {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "login") return { name: "login" };
  if (parts[0] === "operator") return { name: "operator" };
  if (parts[0] === "invite" && parts[1]) return { name: "invite", secret: parts[1] };
  if (parts[0] === "share" && parts[1]) return { name: "share", token: parts[1] };
  if (parts[0] === "o" && parts[1]) {
    if (parts[2] === "settings") return { name: "settings", org: parts[1] };
    if (parts[2] === "console") return { name: "console", org: parts[1], section: parts[3] };
    if (parts[2] === "p" && parts[3]) {
      if (parts[4] === "settings") return { name: "projectSettings", org: parts[1], project: Number(parts[3]) };
      return {
        name: "project",
        org: parts[1],
        project: Number(parts[3]),
        session: parts[4] === "s" ? parts[5] : undefined,
        tab: parts[6],
      };
    }
    return { name: "org", org: parts[1] };
  }
  return { name: "home" };
}

export function Link(props: {
  to: string;
  className?: string;
  children: React.ReactNode;
  title?: string;
  label?: string;
  onNavigate?: () => void;
}) {
  return (
    <a
      href={props.to}
      className={props.className}
      title={props.title}
      aria-label={props.label}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.to);
        props.onNavigate?.();
      }}
    >
      {props.children}
    </a>
  );
}
