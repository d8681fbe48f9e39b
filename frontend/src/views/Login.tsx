import { useState } from "react";
import { get, post, type Me } from "../api/client";

// What a refused single sign-on came back with (/login?sso_error=<code>, from the SSO callback).
const SSO_ERRORS: Record<string, string> = {
  sso_refused: "Single sign-on was refused. Ask an admin of your organisation, or sign in with a password.",
  sso_state: "That single sign-on was not started here or took too long. Try again.",
  sso_not_configured: "Single sign-on is no longer set up for your organisation.",
};

export function Login({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState(() => SSO_ERRORS[new URLSearchParams(location.search).get("sso_error") ?? ""] ?? "");
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      onSignedIn(await post<Me>("/api/auth/login", { email, password }));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  // Single sign-on: the email's domain picks the org's identity provider; the browser goes there.
  const sso = async () => {
    setError("");
    try {
      const { url } = await get<{ url: string }>(`/api/auth/sso/start?mode=json&next=/&email=${encodeURIComponent(email)}`);
      // Only a web address: a javascript: or data: URL would run as this site (the server checks too).
      const target = new URL(url, location.href);
      if (target.protocol !== "https:" && target.protocol !== "http:") throw new Error("The identity provider's address is not a web address.");
      location.assign(target.href);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main className="login">
      <form onSubmit={submit} className="card narrow" aria-labelledby="login-title">
        <h1 id="login-title">Sign in to Hangar</h1>
        <label>
          Email
          <input type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus />
        </label>
        <label>
          Password
          <input type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </label>
        {error && <p className="error" role="alert">{error}</p>}
        <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
        <button type="button" className="secondary" onClick={sso} disabled={busy || !email.includes("@")}>
          Use single sign-on (SSO)
        </button>
      </form>
    </main>
  );
}
