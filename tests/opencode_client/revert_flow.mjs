// Drives a Hangar session's file history through the stock @opencode-ai/sdk (v2 client, the one the CLI
// uses), one step per run so tests/opencode/test_sdk_revert.py can look at the sandbox in between:
//   OC_STEP=prompt   create a session, prompt it (async), wait for session.idle and its session.diff
//   OC_STEP=revert   revert to the session's last user message; OC_STEP=unrevert; OC_STEP=fork (at it)
//   OC_BASE=http://127.0.0.1:PORT/oc/<project> OC_TOKEN=hgr_... [OC_SESSION=ses_...] node revert_flow.mjs
// Prints one JSON line: what the SDK answered.
import { createOpencodeClient } from "@opencode-ai/sdk/v2"

const auth = "Basic " + Buffer.from(`opencode:${process.env.OC_TOKEN}`).toString("base64")
const client = createOpencodeClient({ baseUrl: process.env.OC_BASE, headers: { Authorization: auth } })
const ok = { throwOnError: true }

async function lastUser(sessionID) {
  const messages = await client.session.messages({ sessionID }, ok)
  return messages.data.filter((m) => m.info.role === "user").at(-1).info.id
}

async function prompt() {
  const seen = []
  const events = await client.event.subscribe()
  let done
  const finished = new Promise((resolve) => (done = resolve))
  ;(async () => {
    for await (const event of events.stream) {
      seen.push(event)
      if (event.type === "session.diff" && seen.some((e) => e.type === "session.idle")) done()
    }
  })()
  const created = await client.session.create({ title: "sdk revert" }, ok)
  const sessionID = created.data.id
  await client.session.promptAsync({ sessionID, parts: [{ type: "text", text: "write it" }] }, ok)
  await Promise.race([finished, new Promise((_, reject) => setTimeout(() => reject(new Error("no idle + diff")), 90000))])
  const diff = await client.session.diff({ sessionID }, ok)
  const told = seen.filter((e) => e.type === "session.diff" && e.properties.sessionID === sessionID).at(-1)
  return { sessionID, diff: diff.data, told: told.properties.diff }
}

const sessionID = process.env.OC_SESSION
const steps = {
  prompt,
  revert: async () => {
    const messageID = await lastUser(sessionID)
    return { messageID, session: (await client.session.revert({ sessionID, messageID }, ok)).data }
  },
  unrevert: async () => ({ session: (await client.session.unrevert({ sessionID }, ok)).data }),
  fork: async () => {
    const messageID = await lastUser(sessionID)
    return { messageID, session: (await client.session.fork({ sessionID, messageID }, ok)).data }
  },
}
console.log(JSON.stringify(await steps[process.env.OC_STEP]()))
process.exit(0)
