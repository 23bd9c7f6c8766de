// The invited agent's flow with a TypeScript client generated from
// /openapi-agent.json: openapi-typescript writes gen/consensus.d.ts (at
// test time, never committed) and openapi-fetch calls the real server.
// internal/fwtest runs it: tsc type-checks this file against the generated
// types, then node runs it with the invitation in the environment. It
// prints one JSON line and exits 0 only if every step answered as the
// contract says. Credentials are typed by credentials.gen.mts (generated
// by `make generate`): each client below has only the routes its
// credential opens.
import { createHash } from "node:crypto";
import type { paths, components } from "./gen/consensus.js";
import { credentialed, noCredential, participantToken, sessionToken } from "./credentials.gen.mjs";

type Room = components["schemas"]["Room"];

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const baseUrl = env("CONSENSUS_BASE_URL");
const invitationId = env("CONSENSUS_INVITATION_ID");
const fail = (step: string, status: number, body: unknown): never => {
  throw new Error(`${step}: HTTP ${status}: ${JSON.stringify(body)}`);
};
const sha256 = (b: Uint8Array | string): string => createHash("sha256").update(b).digest("hex");

// RFC 8785 for the objects Consensus hashes (ASCII keys, integers, strings).
const canonical = (v: unknown): string => {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return "{" + Object.keys(o).sort().map((k) => JSON.stringify(k) + ":" + canonical(o[k])).join(",") + "}";
  }
  return JSON.stringify(v);
};

const api = credentialed<paths>({ baseUrl });
const path = { invitationId };

// The secret travels in the body here, so exchange is called with no
// credential, which it accepts.
const ex = await api.withCredential(noCredential).POST("/api/v1/agent/invitations/{invitationId}/exchange", {
  params: { path },
  body: { secret: env("CONSENSUS_SECRET") },
});
if (!ex.data) fail("exchange", ex.response.status, ex.error);
const exchanged = ex.data!;
if (sha256(canonical(exchanged.canonicalRevision)) !== exchanged.revisionDigest) throw new Error("revisionDigest does not verify");
if (sha256(exchanged.markdown) !== exchanged.markdownDigest) throw new Error("markdownDigest does not verify");
if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(exchanged.sessionExpiresAt)) throw new Error("sessionExpiresAt shape");

const cl = await api.withCredential(sessionToken(exchanged.sessionToken)).POST("/api/v1/agent/invitations/{invitationId}/claim", {
  params: { path },
  body: { emailProof: env("CONSENSUS_EMAIL_PROOF"), inbox: env("CONSENSUS_INBOX") },
});
if (!cl.data) fail("claim", cl.response.status, cl.error);
const claimed = cl.data!;
if (sha256(canonical(claimed.binding)) !== claimed.bindingDigest) throw new Error("bindingDigest does not verify");
const participant = participantToken(claimed.participantToken);
const client = api.withCredential(participant);

const rd = await client.GET("/api/v1/agent/invitations/{invitationId}/room", { params: { path, header: {} } });
if (!rd.data) fail("room", rd.response.status, rd.error);
const room: Room = rd.data!;
const digest = room.revision.revisionDigest;

const comment = await client.POST("/api/v1/agent/invitations/{invitationId}/events", {
  params: { path, header: { "Idempotency-Key": "ts-comment-0001" } },
  body: { action: "comment", body: "The window works for the TypeScript agent.", revision: room.revision.number, digest },
});
if (comment.response.status !== 201 || !comment.data) fail("comment", comment.response.status, comment.error);

// The agent's own event: rebuild the room-command/v1 object, then the hash.
const ev = comment.data!.event;
const command = {
  schema: baseUrl + "/schemas/room-command/v1", version: 1, agreement_id: room.agreementId, invitation_id: invitationId,
  participant_id: claimed.participantId, revision: ev.revision, revision_digest: digest, action: ev.action, body: ev.body,
};
const hash = sha256(canonical({ prev: ev.prev, seq: ev.seq, command_digest: sha256(canonical(command)), created_at: ev.createdAt }));
if (hash !== ev.hash) throw new Error("the event hash does not recompute from the served fields");

const agree = await client.POST("/api/v1/agent/invitations/{invitationId}/events", {
  params: { path, header: { "Idempotency-Key": "ts-agree-0001" } },
  body: { action: "agree", body: "", revision: room.revision.number, digest: "sha256:" + digest },
});
if (agree.response.status !== 201 || !agree.data) fail("agree", agree.response.status, agree.error);
if (agree.data!.outcome.status !== "reached") throw new Error(`outcome ${agree.data!.outcome.status}`);

const art = await client.GET("/api/v1/agent/invitations/{invitationId}/artifact", {
  params: { path, header: {} },
  parseAs: "arrayBuffer",
});
if (art.response.status !== 200 || !art.data) fail("artifact", art.response.status, art.error);
const bytes = new Uint8Array(art.data as ArrayBuffer);
const artifactSha = sha256(bytes);
if (artifactSha !== art.response.headers.get("X-Consensus-SHA256")) throw new Error("artifact hash differs from X-Consensus-SHA256");
const contentDigest = "sha-256=:" + createHash("sha256").update(bytes).digest("base64") + ":";
if (contentDigest !== art.response.headers.get("Content-Digest")) throw new Error("artifact hash differs from Content-Digest");

const after = await client.GET("/api/v1/agent/invitations/{invitationId}/room", { params: { path, header: {} } });
if (after.data?.artifact?.sha256 !== artifactSha) throw new Error("the room names another artifact hash");

// The stream, read as the contract's typed messages: every stored event
// from the start, in seq order, and the outcome, which is final here.
type StreamMessage = components["schemas"]["StreamMessage"];
const stop = new AbortController();
const sres = await fetch(`${baseUrl}/api/v1/agent/invitations/${invitationId}/stream`, { headers: { Authorization: participant.authorization! }, signal: stop.signal });
if (sres.status !== 200 || !sres.body) throw new Error(`stream: HTTP ${sres.status}`);
const seen: StreamMessage[] = [];
const want = after.data!.events.length;
let text = "";
let final = false;
const decoder = new TextDecoder();
const reader = sres.body.getReader();
while (!final || seen.filter((m) => m.event === "room.event").length < want) {
  const chunk = await reader.read();
  if (chunk.done) throw new Error("the stream ended before the room was read");
  text += decoder.decode(chunk.value, { stream: true });
  let end: number;
  while ((end = text.indexOf("\n\n")) >= 0) {
    const block = text.slice(0, end);
    text = text.slice(end + 2);
    const fields: Record<string, string> = {};
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue; // a keep-alive comment
      const i = line.indexOf(": ");
      if (i > 0) fields[line.slice(0, i)] = (fields[line.slice(0, i)] ? fields[line.slice(0, i)] + "\n" : "") + line.slice(i + 2);
    }
    if (!fields.event) continue;
    const m = { event: fields.event, id: fields.id, data: JSON.parse(fields.data) } as StreamMessage;
    seen.push(m);
    switch (m.event) {
      case "room.event":
        // Narrowed to StreamRoomEvent: data is an Event, id its seq.
        if (m.id !== String(m.data.seq)) throw new Error(`stream id ${m.id} for seq ${m.data.seq}`);
        break;
      case "room.outcome":
        final = m.data.status === "reached";
        break;
      case "room.revision":
        throw new Error(`no revision was locked, yet the stream announced ${m.data.revision}`);
    }
  }
}
stop.abort();
const streamed = seen.flatMap((m) => (m.event === "room.event" ? [m.data.hash] : []));
if (streamed.join() !== after.data!.events.map((e) => e.hash).join()) throw new Error("the stream's events differ from the room's");

console.log(JSON.stringify({ ok: true, outcome: agree.data!.outcome.status, events: after.data!.events.length, streamed: streamed.length, artifactSha256: artifactSha }));
