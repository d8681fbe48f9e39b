// Drives the agent's longer moves through the stock @opencode-ai/sdk (v2 client, the one the CLI uses)
// against Hangar, one flow per run for tests/opencode/test_sdk_agent.py:
//   OC_STEP=summarize  prompt, then summarize; waits for session.compacted
//   OC_STEP=task       a prompt whose run starts a subagent task; waits for idle, lists the children
//   OC_STEP=answer     a prompt whose run asks a question; answers it when asked; waits for idle
//   OC_STEP=reject     the same, rejecting the question
//   OC_BASE=http://127.0.0.1:PORT/oc/<project> OC_TOKEN=hgr_... OC_TEXT="[[script:…]] …" node agent_flow.mjs
// Prints one JSON line: what the SDK saw.
import { createOpencodeClient } from "@opencode-ai/sdk/v2"

const auth = "Basic " + Buffer.from(`opencode:${process.env.OC_TOKEN}`).toString("base64")
const client = createOpencodeClient({ baseUrl: process.env.OC_BASE, headers: { Authorization: auth } })
const ok = { throwOnError: true }
const seen = []

// Resolves with the first event `match` accepts (events are kept in `seen`).
async function listen() {
  const events = await client.event.subscribe()
  const waiters = []
  ;(async () => {
    for await (const event of events.stream) {
      seen.push(event)
      for (const w of waiters.slice()) if (w.match(event)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(event)
    }
  })()
  return (match, what) =>
    Promise.race([
      new Promise((resolve) => {
        const hit = seen.find(match)
        if (hit) resolve(hit)
        else waiters.push({ match, resolve })
      }),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what}`)), 90000)),
    ])
}

async function start(waitFor) {
  const created = await client.session.create({ title: "sdk agent" }, ok)
  const sessionID = created.data.id
  await client.session.promptAsync({ sessionID, parts: [{ type: "text", text: process.env.OC_TEXT }] }, ok)
  return sessionID
}

const idle = (sessionID) => (e) => e.type === "session.idle" && e.properties.sessionID === sessionID

async function messages(sessionID) {
  return (await client.session.messages({ sessionID }, ok)).data
}

const steps = {
  summarize: async (waitFor) => {
    const sessionID = await start()
    await waitFor(idle(sessionID), "idle after the prompt")
    await client.session.summarize({ sessionID, providerID: "scripted", modelID: "router" }, ok)
    await waitFor((e) => e.type === "session.compacted" && e.properties.sessionID === sessionID, "compacted")
    return { sessionID, messages: await messages(sessionID) }
  },
  task: async (waitFor) => {
    const sessionID = await start()
    await waitFor(idle(sessionID), "idle")
    const children = (await client.session.children({ sessionID }, ok)).data
    return { sessionID, children, messages: await messages(sessionID) }
  },
  answer: async (waitFor) => {
    const sessionID = await start()
    const asked = await waitFor((e) => e.type === "question.asked", "question.asked")
    await client.question.reply({ requestID: asked.properties.id, answers: [["Blue"]] }, ok)
    await waitFor(idle(sessionID), "idle")
    return { sessionID, asked: asked.properties, messages: await messages(sessionID) }
  },
  reject: async (waitFor) => {
    const sessionID = await start()
    const asked = await waitFor((e) => e.type === "question.asked", "question.asked")
    await client.question.reject({ requestID: asked.properties.id }, ok)
    await waitFor(idle(sessionID), "idle")
    return { sessionID, messages: await messages(sessionID) }
  },
}
const waitFor = await listen()
console.log(JSON.stringify(await steps[process.env.OC_STEP](waitFor)))
process.exit(0)
