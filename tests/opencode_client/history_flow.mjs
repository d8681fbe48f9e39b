// The stock @opencode-ai/sdk (v2 client) on what the app calls beyond the TUI (issue 30): a session is
// prompted (its run writes a file), then the SDK reads the change through /vcs/status and /vcs/diff (naming
// the session by its workspace directory, /workspace/<session id>), edits the user's text part, deletes the
// assistant's last message, and lists what is left.
//   OC_BASE=http://127.0.0.1:PORT/oc/<project> OC_TOKEN=hgr_... node history_flow.mjs
// Prints one JSON line.
import { createOpencodeClient } from "@opencode-ai/sdk/v2"

const auth = "Basic " + Buffer.from(`opencode:${process.env.OC_TOKEN}`).toString("base64")
const client = createOpencodeClient({ baseUrl: process.env.OC_BASE, headers: { Authorization: auth } })
const ok = { throwOnError: true }

const events = await client.event.subscribe()
let done
const idle = new Promise((resolve) => (done = resolve))
let sessionID
const seen = new Set()
;(async () => {
  for await (const event of events.stream) {
    if (event.properties?.sessionID !== sessionID) continue
    seen.add(event.type) // the session's diff is stored as its run ends: wait for both
    if (seen.has("session.idle") && seen.has("session.diff")) done()
  }
})()
sessionID = (await client.session.create({ title: "sdk history" }, ok)).data.id
await client.session.promptAsync({ sessionID, parts: [{ type: "text", text: "write it" }] }, ok)
await Promise.race([idle, new Promise((_, reject) => setTimeout(() => reject(new Error("no idle and diff")), 90000))])

const directory = `/workspace/${sessionID}`
const status = (await client.vcs.status({ directory }, ok)).data
const diff = (await client.vcs.diff({ directory, mode: "git" }, ok)).data

const before = (await client.session.messages({ sessionID }, ok)).data
const user = before.find((m) => m.info.role === "user")
const text = user.parts.find((p) => p.type === "text")
const edited = (
  await client.part.update(
    { sessionID, messageID: user.info.id, partID: text.id, part: { ...text, text: "write it, please" } },
    ok,
  )
).data
const last = before.at(-1).info.id
const deleted = (await client.session.deleteMessage({ sessionID, messageID: last }, ok)).data
const after = (await client.session.messages({ sessionID }, ok)).data
console.log(
  JSON.stringify({
    sessionID,
    status,
    diff,
    edited,
    deleted,
    deletedID: last,
    before: before.map((m) => m.info.id),
    after: after.map((m) => m.info.id),
    userText: after.find((m) => m.info.role === "user").parts.find((p) => p.type === "text").text,
  }),
)
process.exit(0)
