// Drives a Hangar project through the stock @opencode-ai/sdk (v2) over what the TUI's `!`, `/init` and
// `/share` call: session.shell, session.init (then waits for idle), session.share, the link's view, and
// session.unshare; then another org's token (OC_OTHER_TOKEN) tries shell and share on the same session.
// Prints one JSON summary line for tests/opencode/test_sdk_share_shell_init.py.
//   OC_BASE=... OC_TOKEN=... OC_OTHER_TOKEN=... OC_MODEL=provider/model node share_shell_init_flow.mjs
import { createOpencodeClient } from "@opencode-ai/sdk/v2"

const basic = (token) => ({ Authorization: "Basic " + Buffer.from(`opencode:${token}`).toString("base64") })
const client = createOpencodeClient({ baseUrl: process.env.OC_BASE, headers: basic(process.env.OC_TOKEN) })
const other = createOpencodeClient({ baseUrl: process.env.OC_BASE, headers: basic(process.env.OC_OTHER_TOKEN) })
const [providerID, modelID] = process.env.OC_MODEL.split("/")
// OpenCode's ascending ids: the time in ms times 0x1000 (room for a counter), 6 bytes of hex, then random.
const messageID = () =>
  "msg_" + ((BigInt(Date.now()) * 0x1000n) & 0xffffffffffffn).toString(16).padStart(12, "0") +
  Math.random().toString(36).slice(2, 16).padEnd(14, "0")

const created = await client.session.create({ title: "sdk share shell init" }, { throwOnError: true })
const sessionID = created.data.id
const shell = await client.session.shell(
  { sessionID, agent: "build", command: "echo from-the-shell > shell.txt && cat shell.txt" },
  { throwOnError: true },
)
const init = await client.session.init({ sessionID, providerID, modelID, messageID: messageID() }, { throwOnError: true })
for (let i = 0; i < 600; i++) {
  const status = await client.session.status({}, { throwOnError: true })
  if (!status.data[sessionID]) break
  await new Promise((r) => setTimeout(r, 200))
}
const messages = await client.session.messages({ sessionID }, { throwOnError: true })
const shared = await client.session.share({ sessionID }, { throwOnError: true })
const token = shared.data.share.url.split("/share/")[1]
const view = await fetch(new URL(`/api/shares/${token}`, process.env.OC_BASE), { headers: { Authorization: `Bearer ${process.env.OC_TOKEN}` } })
const viewBody = await view.json()
const otherShell = await other.session.shell({ sessionID, agent: "build", command: "ls" })
const otherShare = await other.session.share({ sessionID })
const otherUnshare = await other.session.unshare({ sessionID })
const unshared = await client.session.unshare({ sessionID }, { throwOnError: true })
const afterUnshare = await fetch(new URL(`/api/shares/${token}`, process.env.OC_BASE), { headers: { Authorization: `Bearer ${process.env.OC_TOKEN}` } })

console.log(JSON.stringify({
  sessionID,
  shell: { role: shell.data.info.role, parts: shell.data.parts.map((p) => ({ tool: p.tool, status: p.state.status, output: p.state.output })) },
  init: init.data,
  messages: messages.data.map((m) => ({ role: m.info.role, parts: m.parts.map((p) => ({ type: p.type, tool: p.tool, text: p.text, synthetic: p.synthetic })) })),
  shareURL: shared.data.share.url,
  view: { status: view.status, title: viewBody.session?.title, messages: viewBody.messages?.length },
  other: { shell: otherShell.response.status, share: otherShare.response.status, unshare: otherUnshare.response.status },
  unshared: unshared.data.share ?? null,
  afterUnshare: afterUnshare.status,
}))
process.exit(0)
