// The page an invitation link opens: what it invites to, then accept it signed in as the invited address,
// or create that account (the link works once, until it expires).
import { useEffect, useState } from "react";
import { get, post, type Me } from "../../api/client";
import { navigate } from "../../router";
import { ErrorLine, useAction } from "./common";

type Preview = { org: string; org_name: string; email: string; role: string; state: string; signed_in_as: string | null };

export function Invite({ secret, me, onSignedIn }: { secret: string; me: Me | null; onSignedIn: (me: Me) => void }) {
  const [preview, setPreview] = useState<Preview | null>(null);
  const [loadError, setLoadError] = useState("");
  const [password, setPassword] = useState("");
  const [name, setName] = useState("");
  const [busy, error, run] = useAction();
  useEffect(() => {
    get<Preview>(`/api/invitations/${encodeURIComponent(secret)}`)
      .then(setPreview)
      .catch((e) => setLoadError((e as Error).message === "Not found." ? "This invitation link is not valid." : (e as Error).message));
  }, [secret]);
  const accept = (e: React.FormEvent) => {
    e.preventDefault();
    run(async () => {
      const body = me ? {} : { password, name };
      const done = await post<{ org: string; me: Me }>(`/api/invitations/${encodeURIComponent(secret)}/accept`, body);
      onSignedIn(done.me);
      navigate(`/o/${done.org}`, true);
    });
  };
  return (
    <div className="login">
      <form className="card narrow" onSubmit={accept} aria-label="Accept invitation">
        <h1>Join an organisation</h1>
        <ErrorLine error={loadError} />
        {preview && (
          <p>
            <strong>{preview.org_name}</strong> invites <strong>{preview.email}</strong> as {preview.role}.
          </p>
        )}
        {preview && preview.state !== "pending" && <p className="error" role="alert">This invitation is {preview.state}.</p>}
        {preview?.state === "pending" && me && me.email !== preview.email && (
          <p className="error" role="alert">You are signed in as {me.email}; sign out and open the link again.</p>
        )}
        {preview?.state === "pending" && !me && (
          <>
            <label>Your name<input value={name} onChange={(e) => setName(e.target.value)} autoComplete="name" /></label>
            <label>Choose a password<input type="password" value={password} onChange={(e) => setPassword(e.target.value)} required autoComplete="new-password" /></label>
            <p className="muted small">Already have an account for {preview.email}? <a href="/login">Sign in</a>, then open the link again.</p>
          </>
        )}
        <ErrorLine error={error} />
        {preview?.state === "pending" && (!me || me.email === preview.email) && (
          <button type="submit" disabled={busy}>{me ? "Accept invitation" : "Create account and join"}</button>
        )}
      </form>
    </div>
  );
}
