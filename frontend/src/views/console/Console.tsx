// The admin console: who may do what, what it costs, what happened. Admins and owners see every section;
// auditors see usage, budgets, SSO (read only) and the audit log, which is all their role may read. The
// platform operator (a superuser) also sees the sandbox hosts, which are no org's: in any org's console.
import type { Me } from "../../api/client";
import { Link } from "../../router";
import { Agents } from "./Agents";
import { Audit } from "./Audit";
import { Budgets } from "./Budgets";
import { Hosts } from "./Hosts";
import "./console.css";
import { McpPolicy } from "./Mcp";
import { Members } from "./Members";
import { Policies } from "./Policies";
import { Repositories } from "./Repositories";
import { Sso } from "./Sso";
import { Usage } from "./Usage";
import { Webhooks } from "./Webhooks";

// Who sees a section: an org's admins and owners ("admin"), also its auditors ("reader"), or only the
// platform operator ("operator").
const SECTIONS = [
  { key: "members", label: "Members", who: "admin" },
  { key: "policies", label: "Policies", who: "admin" },
  { key: "repositories", label: "Repositories", who: "admin" },
  { key: "agents", label: "Agents", who: "admin" },
  { key: "mcp", label: "MCP", who: "admin" },
  { key: "usage", label: "Usage", who: "reader" },
  { key: "budgets", label: "Budgets", who: "reader" },
  { key: "audit", label: "Audit log", who: "reader" },
  { key: "sso", label: "Single sign-on", who: "reader" },
  { key: "webhooks", label: "Webhooks", who: "admin" },
  { key: "hosts", label: "Hosts", who: "operator" },
] as const;

const reader = (role: string | undefined) => role === "owner" || role === "admin" || role === "auditor";

export function canSeeConsole(me: Me, org: string): boolean {
  return me.operator || reader(me.orgs.find((m) => m.org === org)?.role);
}

export function Console({ org, me, section }: { org: string; me: Me; section?: string }) {
  const role = me.orgs.find((m) => m.org === org)?.role;
  if (!canSeeConsole(me, org)) return <p className="center">The console is for admins and auditors.</p>;
  const admin = role === "owner" || role === "admin";
  const sections = SECTIONS.filter(
    (s) => (s.who === "operator" ? me.operator : s.who === "admin" ? admin : reader(role)),
  );
  const current = sections.find((s) => s.key === section) ?? sections[0];
  return (
    <div className="page console">
      <h1>Admin console</h1>
      <nav className="consolenav" aria-label="Console sections">
        {sections.map((s) => (
          <Link key={s.key} to={`/o/${org}/console/${s.key}`} className={s.key === current.key ? "tab active" : "tab"}>
            {s.label}
          </Link>
        ))}
      </nav>
      {current.key === "members" && <Members org={org} me={me} />}
      {current.key === "sso" && <Sso org={org} admin={admin} />}
      {current.key === "policies" && <Policies org={org} />}
      {current.key === "repositories" && <Repositories org={org} />}
      {current.key === "agents" && <Agents org={org} />}
      {current.key === "mcp" && <McpPolicy org={org} />}
      {current.key === "budgets" && <Budgets org={org} admin={admin} />}
      {current.key === "usage" && <Usage org={org} />}
      {current.key === "audit" && <Audit org={org} />}
      {current.key === "webhooks" && <Webhooks org={org} />}
      {current.key === "hosts" && <Hosts />}
    </div>
  );
}
