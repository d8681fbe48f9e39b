// Drives a Hangar project through the stock @opencode-ai/sdk (v2 client, the one the CLI uses):
// subscribe to /event, create a session, prompt (async), reply "once" to the permission it asks,
// wait for idle, list messages and todos. Prints one JSON summary line for tests/opencode/test_sdk.py.
//   OC_BASE=http://127.0.0.1:PORT/oc/<project> OC_TOKEN=hgr_... OC_PROMPT="..." node sdk_flow.mjs
import { createOpencodeClient } from "@opencode-ai/sdk/v2"

const base = process.env.OC_BASE
const auth = "Basic " + Buffer.from(`opencode:${process.env.OC_TOKEN}`).toString("base64")
const client = createOpencodeClient({ baseUrl: base, headers: { Authorization: auth } })

const seen = []
const waiters = []
function waitFor(predicate, ms = 60000) {
  const hit = seen.find(predicate)
  if (hit) return Promise.resolve(hit)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timed out; saw " + seen.map((e) => e.type).join(","))), ms)
    waiters.push({ predicate, resolve: (e) => { clearTimeout(timer); resolve(e) } })
  })
}

const events = await client.event.subscribe()
;(async () => {
  for await (const event of events.stream) {
    seen.push(event)
    for (const w of [...waiters]) if (w.predicate(event)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(event) }
  }
})()
await waitFor((e) => e.type === "server.connected")

const created = await client.session.create({ title: "sdk session" }, { throwOnError: true })
const sessionID = created.data.id
await client.session.promptAsync({ sessionID, parts: [{ type: "text", text: process.env.OC_PROMPT || "go" }] },
  { throwOnError: true })
const asked = await waitFor((e) => e.type === "permission.asked" && e.properties.sessionID === sessionID)
const pending = await client.permission.list({}, { throwOnError: true })
const replied = await client.permission.reply({ requestID: asked.properties.id, reply: "once" }, { throwOnError: true })
await waitFor((e) => e.type === "session.idle" && e.properties.sessionID === sessionID)
const messages = await client.session.messages({ sessionID }, { throwOnError: true })
const todos = await client.session.todo({ sessionID }, { throwOnError: true })
const got = await client.session.get({ sessionID }, { throwOnError: true })

console.log(JSON.stringify({
  sessionID,
  title: got.data.title,
  eventTypes: seen.filter((e) => !e.properties?.sessionID || e.properties.sessionID === sessionID).map((e) => e.type),
  deltas: seen.filter((e) => e.type === "message.part.delta").map((e) => e.properties.delta).join(""),
  permission: { id: asked.properties.id, permission: asked.properties.permission, pendingListed: pending.data.map((p) => p.id), replied: replied.data },
  messages: messages.data.map((m) => ({ role: m.info.role, parts: m.parts.map((p) => ({ type: p.type, tool: p.tool, status: p.state?.status, text: p.text, output: p.state?.output })) })),
  todos: todos.data,
}))
process.exit(0)
