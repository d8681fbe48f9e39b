import { useEffect, useState } from "react";
import { ApiError, get, post, type Me } from "./api/client";
import { Link, match, navigate, usePath } from "./router";
import { Login } from "./views/Login";
import { OrgHome } from "./views/OrgHome";
import { Hosts } from "./views/console/Hosts";
import { ProjectPage } from "./views/ProjectPage";
import { ProjectSettings } from "./views/ProjectSettings";
import { Settings } from "./views/Settings";
import { ModelReadiness } from "./views/ModelReadiness";
import { Console, canSeeConsole } from "./views/console/Console";
import { Invite } from "./views/console/Invite";
import { Notices } from "./views/Notices";
import { SharePage } from "./views/SharePage";

export function App() {
  const path = usePath();
  const route = match(path);
  const [me, setMe] = useState<Me | null | undefined>(undefined);

  useEffect(() => {
    get<Me>("/api/me")
      .then(setMe)
      .catch((e) => (e instanceof ApiError && (e.status === 401 || e.status === 403) ? setMe(null) : setMe(null)));
  }, []);

  useEffect(() => {
    // A share link opens without signing in where its org allows it (the server decides).
    if (me === null && route.name !== "login" && route.name !== "invite" && route.name !== "share")
      navigate("/login", true);
    if (me && (route.name === "home" || route.name === "login")) {
      const org = me.orgs[0]?.org;
      // An operator who belongs to no org lands on the sandbox hosts, the one screen that is theirs.
      navigate(org ? `/o/${org}` : me.operator ? "/operator" : "/o/", true);
    }
  }, [me, route.name]);

  if (me === undefined) return <div className="center muted" role="status">Loading…</div>;
  if (route.name === "invite") return <Invite secret={route.secret} me={me} onSignedIn={setMe} />;
  if (route.name === "share") return <SharePage token={route.token} />;
  if (me === null || route.name === "login") return <Login onSignedIn={setMe} />;

  const org = "org" in route ? route.org : me.orgs[0]?.org;
  const signOut = async () => {
    await post("/api/auth/logout");
    setMe(null);
    navigate("/login");
  };
  return (
    <div className="app">
      <header className="topbar">
        <Link to={org ? `/o/${org}` : "/"} className="brand">Hangar</Link>
        {me.orgs.length > 0 && (
          <label className="orgpick">
            <span className="sr-only">Organisation</span>
            <select value={org} onChange={(e) => navigate(`/o/${e.target.value}`)}>
              {me.orgs.map((m) => (
                <option key={m.org} value={m.org}>{m.org_name}</option>
              ))}
            </select>
          </label>
        )}
        <span className="spacer" />
        {org && <Notices org={org} />}
        <ModelReadiness />
        {org && canSeeConsole(me, org) && (
          <Link to={`/o/${org}/console`} className="navlink">Console</Link>
        )}
        {!org && me.operator && <Link to="/operator" className="navlink">Hosts</Link>}
        {org && <Link to={`/o/${org}/settings`} className="navlink">Settings</Link>}
        <span className="muted me" title={me.email}>{me.email}</span>
        <button className="ghost" onClick={signOut}>Sign out</button>
      </header>
      <main className="content">
        {route.name === "operator" &&
          (me.operator ? (
            <div className="page console">
              <h1>Operator</h1>
              <Hosts />
            </div>
          ) : (
            <p className="center">This page is for the platform's operators.</p>
          ))}
        {!org && route.name !== "operator" && <p className="center">You are not a member of any organisation yet.</p>}
        {org && route.name === "org" && <OrgHome org={org} />}
        {org && route.name === "settings" && <Settings org={org} me={me} />}
        {org && route.name === "console" && <Console org={org} me={me} section={route.section} />}
        {org && route.name === "projectSettings" && <ProjectSettings key={route.project} org={org} project={route.project} me={me} />}
        {org && route.name === "project" && (
          <ProjectPage org={org} project={route.project} session={route.session} tab={route.tab} />
        )}
      </main>
    </div>
  );
}
