// The admin console: who may do what, what it costs, what happened. Admins and owners see every section;
// auditors see usage, budgets, SSO (read only) and the audit log, which is all their role may read.
import type { Me } from "../../api/client";
import { Link } from "../../router";
import { Agents } from "./Agents";
import { Audit } from "./Audit";
import { Budgets } from "./Budgets";
import "./console.css";
import { McpPolicy } from "./Mcp";
import { Members } from "./Members";
import { Policies } from "./Policies";
import { Repositories } from "./Repositories";
import { Sso } from "./Sso";
import { Usage } from "./Usage";
import { Webhooks } from "./Webhooks";

const SECTIONS = [
  { key: "members", label: "Members", admin: true },
  { key: "policies", label: "Policies", admin: true },
  { key: "repositories", label: "Repositories", admin: true },
  { key: "agents", label: "Agents", admin: true },
  { key: "mcp", label: "MCP", admin: true },
  { key: "usage", label: "Usage", admin: false },
  { key: "budgets", label: "Budgets", admin: false },
  { key: "audit", label: "Audit log", admin: false },
  { key: "sso", label: "Single sign-on", admin: false },
  { key: "webhooks", label: "Webhooks", admin: true },
] as const;

export function canSeeConsole(role: string | undefined): boolean {
  return role === "owner" || role === "admin" || role === "auditor";
}

export function Console({ org, me, section }: { org: string; me: Me; section?: string }) {
  const role = me.orgs.find((m) => m.org === org)?.role;
  if (!canSeeConsole(role)) return <p className="center">The console is for admins and auditors.</p>;
  const admin = role !== "auditor";
  const sections = SECTIONS.filter((s) => admin || !s.admin);
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
    </div>
  );
}
