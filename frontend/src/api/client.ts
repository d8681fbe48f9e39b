// The one place the app talks HTTP to Hangar. Shapes come from the generated OpenAPI types (schema.d.ts).
import type { components } from "./schema";

export type Schemas = components["schemas"];
export type Me = Schemas["MeOut"];
export type Project = Schemas["ProjectOut"];
export type EnvVar = Schemas["EnvVarOut"];
export type SecretScope = Schemas["SecretScope"];
export type CachedEnvironment = Schemas["EnvironmentOut"];
export type Session = Schemas["SessionOutput"];
export type SessionDetail = Schemas["SessionDetailOutput"];
export type SessionPage = Schemas["SessionPageOutput"];
export type MessageOut = Schemas["MessageOutput"];
export type EventOut = Schemas["EventOutput"];
export type EventPage = Schemas["EventPageOutput"];
export type PermissionRequest = Schemas["PermissionRequestOutput"];
export type PermissionReplyInput = Schemas["PermissionReplyInput"];
export type QuestionRequest = Schemas["QuestionOutput"];
export type AnswersInput = Schemas["AnswersInput"];
export type PromptInput = Schemas["PromptInput"];
export type PromptOutput = Schemas["PromptOutput"];
export type Todo = Schemas["TodoOutput"];
export type Agent = Schemas["AgentOutput"];
export type Member = Schemas["MemberOut"];
export type Token = Schemas["TokenOut"];
export type TokenCreated = Schemas["TokenCreatedOut"];
export type Credential = Schemas["CredentialOut"];
export type Health = Schemas["HealthOut"];
export type ProjectIn = Schemas["ProjectIn"];
export type Workspace = Schemas["WorkspaceOut"];
export type WorkspaceOperation = Schemas["OperationOut"];
export type OperationAnswer = Schemas["OperationAnswer"];
export type FileList = Schemas["FileListOut"];
export type WebhookEndpoint = Schemas["EndpointOut"];
export type WebhookEndpointCreated = Schemas["EndpointCreatedOut"];
export type WebhookTrigger = Schemas["TriggerOut"];
export type WebhookTriggerCreated = Schemas["TriggerCreatedOut"];
export type WebhookDelivery = Schemas["DeliveryOut"];
export type FileEntry = Schemas["FileEntryOut"];
export type FileContent = Schemas["FileContentOut"];
export type SandboxHost = Schemas["SandboxHostOut"];

export class ApiError extends Error {
  constructor(
    public status: number,
    public body: unknown,
  ) {
    super(errorText(status, body));
  }
}

function errorText(status: number, body: unknown): string {
  const err = (body as { error?: { message?: string; fields?: Record<string, string[]> } })?.error;
  if (err?.fields) {
    return Object.entries(err.fields)
      .map(([k, v]) => `${k}: ${v.join(" ")}`)
      .join("; ");
  }
  return err?.message || `Request failed (${status})`;
}

function cookie(name: string): string {
  const hit = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  return hit ? decodeURIComponent(hit.slice(name.length + 1)) : "";
}

let csrfReady: Promise<void> | null = null;
function ensureCsrf(): Promise<void> {
  if (cookie("csrftoken")) return Promise.resolve();
  csrfReady ??= fetch("/api/auth/csrf", { credentials: "same-origin" }).then(() => undefined);
  return csrfReady;
}

// A GET that fails before any answer (fetch rejects with a TypeError: a dropped keep-alive connection, a
// server restarting, a blip on the user's network) is sent again after 0.3 s and after 1 s before its
// error is shown: it changes nothing. Other methods are sent once (a POST may have been applied).
const GET_RETRIES_MS = [300, 1000];

async function fetchGet(url: string, init: RequestInit): Promise<Response> {
  for (const wait of GET_RETRIES_MS) {
    try {
      return await fetch(url, init);
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
  return fetch(url, init);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method !== "GET") {
    await ensureCsrf();
    headers["X-CSRFToken"] = cookie("csrftoken");
  }
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const init: RequestInit = {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  };
  const response = await (method === "GET" ? fetchGet(path, init) : fetch(path, init));
  if (response.status === 204) return undefined as T;
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data as T;
}

export const get = <T>(path: string) => api<T>("GET", path);

// Every item of a paged list (the server names the older page in X-Next-Cursor), oldest first: each
// request stays one bounded page, however long the list.
export async function getAll<T>(path: string): Promise<T[]> {
  let items: T[] = [];
  let url = path;
  for (;;) {
    const response = await fetchGet(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data);
    items = [...(data as T[]), ...items];
    const next = response.headers.get("X-Next-Cursor");
    if (!next) return items;
    url = `${path}${path.includes("?") ? "&" : "?"}before=${encodeURIComponent(next)}`;
  }
}
export const post = <T>(path: string, body?: unknown) => api<T>("POST", path, body);

export function projectPath(org: string, project: number | string): string {
  return `/api/orgs/${encodeURIComponent(org)}/projects/${project}/`;
}

export function sessionPath(org: string, project: number | string, session: string): string {
  return `${projectPath(org, project)}sessions/${encodeURIComponent(session)}/`;
}

// A 400's messages by the field it names (`policy.local[0]`, `mcp.github.url`), to show beside that field;
// empty for any other error.
export function fieldErrors(error: unknown): Record<string, string> {
  if (!(error instanceof ApiError) || error.status !== 400) return {};
  const fields = (error.body as { error?: { fields?: Record<string, string[] | string> } })?.error?.fields ?? {};
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Array.isArray(v) ? v.join(" ") : String(v)]));
}
