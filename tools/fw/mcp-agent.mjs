// A keyed participant on MCP alone, with the official TypeScript SDK
// (@modelcontextprotocol/sdk) over Streamable HTTP. It knows the endpoint,
// its participant token and its Ed25519 private key, and learns everything
// else from tools/list: it reads the room, waits with wait_for_change,
// signs the bytes command_to_sign gives, decides with that signature,
// waits for the final outcome, and verifies the record fetch_record embeds
// with the verifier downloaded from the service (/tools/verify-record.mjs)
// against the published keys (/.well-known/consensus-keys). A changed byte
// must fail that verifier.
//
// internal/mcpfacade runs it against a real server, with the other
// participant acting from Go. The two talk over standard output: one JSON
// object a line, {"step":"waiting"} before the first wait (the other then
// comments), {"step":"decided"} after the decision (the other then
// decides), and a last {"ok":true,...}. Any failure throws: exit status 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createHash, createPrivateKey, sign } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const baseUrl = env("CONSENSUS_BASE_URL");
const token = env("CONSENSUS_PARTICIPANT_TOKEN");
// The private key as a JWK (OKP, Ed25519, d and x), the public half of
// which the participant bound at claim.
const key = createPrivateKey({ key: JSON.parse(env("CONSENSUS_PRIVATE_JWK")), format: "jwk" });
const step = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const must = (cond, what) => {
  if (!cond) throw new Error(what);
};

const client = new Client({ name: "consensus-ts-sdk-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), {
  requestInit: { headers: { Authorization: `Consensus-Participant ${token}` } },
});
await client.connect(transport);

// Only what tools/list describes.
const { tools } = await client.listTools();
const byName = new Map(tools.map((t) => [t.name, t]));
for (const [name, member] of [["read_room", null], ["wait_for_change", "afterSeq"], ["command_to_sign", "idempotencyKey"], ["decide", "signature"], ["fetch_record", null]]) {
  const tool = byName.get(name);
  must(tool, `tools/list has no ${name}`);
  if (member) must(tool.inputSchema?.properties?.[member], `${name}'s input schema lacks ${member}`);
}

// A tool's structured content, or a throw with its text when refused.
const call = async (name, args = {}) => {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) throw new Error(`${name} refused: ${res.content.map((c) => c.text ?? "").join("\n")}`);
  must(res.structuredContent, `${name} returned no structured content`);
  return res;
};

const room = (await call("read_room")).structuredContent;
const revision = room.revision.number;
const digest = room.revision.revisionDigest;
must(room.outcome.status === "pending" && room.events.length === 0, "the room is not fresh");

// The other participant comments while this one waits.
step({ step: "waiting" });
const woke = (await call("wait_for_change", { afterSeq: 0, version: room.version, waitSeconds: 30 })).structuredContent;
must(woke.changed && woke.events.length === 1 && woke.events[0].action === "comment" && woke.events[0].body.untrusted, `the wait answered ${JSON.stringify(woke)}`);

// Sign exactly the bytes command_to_sign returns, then decide with them.
const idempotencyKey = "ts-sdk-decide-0001";
const toSign = (await call("command_to_sign", { action: "agree", revision, digest, idempotencyKey })).structuredContent;
const bytes = Buffer.from(toSign.canonicalBase64url, "base64url");
must(bytes.toString("utf8") === toSign.canonical, "canonical and canonicalBase64url differ");
must(createHash("sha256").update(bytes).digest("hex") === toSign.sha256, "sha256 is not the bytes' hash");
const signature = sign(null, bytes, key).toString("base64url");
const decided = (await call("decide", { decision: "agree", revision, digest, confirm: true, idempotencyKey, signature })).structuredContent;
must(decided.created && decided.event.action === "agree" && decided.outcome.status === "pending", `decide answered ${JSON.stringify(decided)}`);

// The other participant decides; wait until the outcome is final.
step({ step: "decided" });
let after = woke.next;
let version = woke.version;
let final = null;
for (let i = 0; i < 10 && !final; i++) {
  const w = (await call("wait_for_change", { afterSeq: after, version, waitSeconds: 30 })).structuredContent;
  after = w.next;
  version = w.version;
  if (w.final) final = w;
}
must(final && final.outcome.status === "reached", "the outcome never became final");

// The record's exact bytes are the embedded resource.
const rec = await call("fetch_record");
const resources = rec.content.filter((c) => c.type === "resource");
must(resources.length === 1 && resources[0].resource.mimeType === "application/json" && typeof resources[0].resource.text === "string", "fetch_record embeds no JSON resource");
const record = Buffer.from(resources[0].resource.text, "utf8");
must(createHash("sha256").update(record).digest("hex") === rec.structuredContent.sha256, "the embedded bytes are not the ones sha256 names");
await client.close();

// Verify with what the service publishes, in a fresh Node process.
const download = async (path) => {
  const res = await fetch(new URL(path, baseUrl));
  must(res.status === 200, `GET ${path}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
};
const dir = await mkdtemp(join(tmpdir(), "consensus-ts-sdk-"));
const verify = (file) =>
  new Promise((resolve) => {
    execFile(process.execPath, [join(dir, "verify-record.mjs"), file, "--keys", join(dir, "keys.json")], (err, stdout, stderr) =>
      resolve({ code: err ? err.code : 0, out: stdout + stderr }),
    );
  });
try {
  await writeFile(join(dir, "verify-record.mjs"), await download("/tools/verify-record.mjs"));
  await writeFile(join(dir, "keys.json"), await download("/.well-known/consensus-keys"));
  await writeFile(join(dir, "record.json"), record);
  const good = await verify(join(dir, "record.json"));
  must(good.code === 0 && good.out.includes("ok   participant-signature") && good.out.includes("RESULT: VERIFIED"), `the verifier said (${good.code}):\n${good.out}`);
  // One changed byte: a letter of the other participant's comment.
  const changed = Buffer.from(record);
  const at = changed.indexOf(Buffer.from(woke.events[0].body.text));
  must(at >= 0, "the comment is not in the record");
  changed[at] ^= 0x20;
  await writeFile(join(dir, "changed.json"), changed);
  const bad = await verify(join(dir, "changed.json"));
  must(bad.code === 1 && bad.out.includes("RESULT: FAILED"), `a changed byte: the verifier said (${bad.code}):\n${bad.out}`);
  step({ ok: true, tools: tools.length, outcome: final.outcome.status, recordSha256: rec.structuredContent.sha256, changedByteFails: true });
} finally {
  await rm(dir, { recursive: true, force: true });
}
