// Members and invitations: change a role, remove a member, invite by email (the link goes out by mail and
// works once), revoke a pending invitation; and what each role may do.
import { useState } from "react";
import { api, post, type Me, type Member } from "../../api/client";
import { ErrorLine, useAction, useLoad } from "./common";

type Invitation = { id: number; email: string; role: string; state: string; invited_by: string | null; expires_at: string };

const ROLES = ["owner", "admin", "member", "viewer", "auditor"];
const ROLE_TEXT: Record<string, string> = {
  owner: "Everything an admin may, and grants or removes the owner role.",
  admin: "Members, invitations, projects, policies, budgets, SSO, credentials; reads usage and the audit log.",
  member: "Starts and steers sessions in the org's projects.",
  viewer: "Reads projects and sessions.",
  auditor: "Reads the audit log, usage and budgets; nothing else.",
};

// The clipboard where the browser allows it (a secure context); else the link is left selected to copy.
async function copyLink(link: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(link);
    return true;
  } catch {
    const input = document.querySelector<HTMLInputElement>("input[aria-label='Invitation link']");
    input?.focus();
    input?.select();
    return false;
  }
}

export function Members({ org, me }: { org: string; me: Me }) {
  const members = useLoad<Member[]>(`/api/orgs/${org}/members/`);
  const invitations = useLoad<Invitation[]>(`/api/orgs/${org}/invitations/`);
  const [busy, error, run] = useAction();
  const [inviting, inviteError, runInvite] = useAction();
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("member");
  const [sent, setSent] = useState("");
  const [link, setLink] = useState("");
  const [copied, setCopied] = useState(false);
  const owner = me.orgs.find((m) => m.org === org)?.role === "owner";
  const roles = owner ? ROLES : ROLES.filter((r) => r !== "owner");

  const invite = async (e: React.FormEvent) => {
    e.preventDefault();
    setSent("");
    setLink("");
    setCopied(false);
    if (await runInvite(async () => setLink((await post<{ link: string }>(`/api/orgs/${org}/invitations/`, { email, role })).link))) {
      setSent(`Invitation sent to ${email}.`);
      setEmail("");
      invitations.reload();
    }
  };
  const changeRole = (m: Member, to: string) =>
    run(() => api("PATCH", `/api/orgs/${org}/members/${m.id}`, { role: to })).then(members.reload);
  const remove = (m: Member) =>
    confirm(`Remove ${m.email} from the organisation?`) &&
    run(() => api("DELETE", `/api/orgs/${org}/members/${m.id}`)).then(members.reload);
  const revoke = (i: Invitation) => run(() => api("DELETE", `/api/orgs/${org}/invitations/${i.id}`)).then(invitations.reload);

  return (
    <>
      <section className="card" aria-labelledby="members-h">
        <h2 id="members-h">Members</h2>
        <ErrorLine error={members.error || error} />
        <div className="tablewrap" tabIndex={0}>
          <table>
            <thead><tr><th>Email</th><th>Role</th><th>Since</th><th><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {members.data?.map((m) => (
                <tr key={m.id}>
                  <td>{m.email}</td>
                  <td>
                    <select aria-label={`Role of ${m.email}`} value={m.role} disabled={busy || (m.role === "owner" && !owner)}
                      onChange={(e) => changeRole(m, e.target.value)}>
                      {(m.role === "owner" && !owner ? ROLES : roles).map((r) => <option key={r} value={r}>{r}</option>)}
                    </select>
                  </td>
                  <td className="muted">{new Date(m.created_at).toLocaleDateString()}</td>
                  <td><button className="ghost danger" onClick={() => remove(m)} disabled={busy}>Remove</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section className="card" aria-labelledby="invite-h">
        <h2 id="invite-h">Invitations</h2>
        <form className="inline" onSubmit={invite} aria-label="Invite a member">
          <label>Email<input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required /></label>
          <label>Role
            <select value={role} onChange={(e) => setRole(e.target.value)}>
              {roles.map((r) => <option key={r} value={r}>{r}</option>)}
            </select>
          </label>
          <button type="submit" disabled={inviting}>Send invitation</button>
        </form>
        <ErrorLine error={inviteError} />
        {sent && (
          <div className="banner ok invited" role="status">
            <p>{sent} The mail carries this link; copy it to send it another way. It is shown only now.</p>
            {link && (
              <div className="copyline">
                <input readOnly value={link} aria-label="Invitation link" className="mono" onFocus={(e) => e.target.select()} />
                <button type="button" className="secondary" onClick={() => copyLink(link).then(setCopied)}>{copied ? "Copied" : "Copy link"}</button>
              </div>
            )}
          </div>
        )}
        <ErrorLine error={invitations.error} />
        {invitations.data?.length === 0 && <p className="muted">No invitations yet.</p>}
        {!!invitations.data?.length && (
          <div className="tablewrap" tabIndex={0}>
            <table>
              <thead><tr><th>Email</th><th>Role</th><th>State</th><th>Expires</th><th><span className="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {invitations.data.map((i) => (
                  <tr key={i.id}>
                    <td>{i.email}</td><td>{i.role}</td><td><span className="badge">{i.state}</span></td>
                    <td className="muted">{new Date(i.expires_at).toLocaleString()}</td>
                    <td>{i.state === "pending" && <button className="ghost danger" onClick={() => revoke(i)} disabled={busy}>Revoke</button>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section className="card" aria-labelledby="roles-h">
        <h2 id="roles-h">Roles</h2>
        <table>
          <tbody>
            {ROLES.map((r) => <tr key={r}><th scope="row">{r}</th><td>{ROLE_TEXT[r]}</td></tr>)}
          </tbody>
        </table>
      </section>
    </>
  );
}
