#!/usr/bin/env node
// An independent verifier of consensus-record/v1 on Node's standard library
// only (node:crypto, node:fs): it shares no code with the Go verifier of
// `consensus verify record`, and reports failures under the same check names.
//
//   node tools/verify-record.mjs RECORD.json [--artifact CONSENSUS.md] [--keys JWKS] [--message REPLY.eml]...
//       [--proof PROOF.json [--log-key VKEY] [--witness NAME=KEY]... [--witnesses N]]
//   node tools/verify-record.mjs --conformance conformance/records
//
// --proof checks a consensus-log-proof/v1 bundle of the record: its leaf is
// the record's, the log's signature on the checkpoint (with --log-key, or the
// "log" member's verifierKey of the --keys document), the inclusion proof,
// and at least N cosignatures (default: one per --witness) of the witnesses
// named. Exit status: 0 nothing failed, 1 a check failed (or a vector
// differed), 2 usage. Without --keys the service signature is skipped and
// the result says NOT AUTHENTICATED.
import { createHash, createPublicKey, verify as edVerify } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseStrict, canonicalize } from "./verify-record/json.mjs";
import { checkShape } from "./verify-record/shape.mjs";
import { evaluate, instant, isTerminal, checkCommandBody, carriesOver, ruleWords } from "./verify-record/rule.mjs";
import { checkRevisions } from "./verify-record/revisions.mjs";
import { checkEvidence } from "./verify-record/evidence.mjs";
import { PROOF_CHECKS, parseProof, verifyProof, formatProof, parseVerifierKey, parseWitnessKey } from "./verify-record/proof.mjs";

const CHECKS = ["format", "revision", "revision-digest", "markdown-digest", "terms-digest", "roster", "command", "command-digest", "chain",
  "participant-signature", "reply-evidence", "chain-head", "event-count", "outcome", "artifact", "service-signature"];
const ZERO = "0".repeat(64);

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const utf8 = (s) => Buffer.from(s, "utf8");

// Unpadded base64url of exactly n bytes, in its one canonical spelling.
function b64url(s, n) {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*$/.test(s)) return null;
  const b = Buffer.from(s, "base64url");
  return b.length === n && b.toString("base64url") === s ? b : null;
}

// The small-order points of Ed25519 by y (0, 1, p-1 and the order-8 pair):
// a key there accepts forged signatures. y at or above p is non-canonical.
const P = (1n << 255n) - 19n;
const Y8 = 0x05fc536d880238b13933c6d305acdfd5f098eff289f4c345b027b2c28f95e826n;
const WEAK = new Set([0n, 1n, P - 1n, Y8, P - Y8]);

// publicKey returns a KeyObject for an OKP Ed25519 JWK {kty, crv, x}, or an
// error string.
export function publicKey(jwk) {
  if (!jwk || jwk.kty !== "OKP" || jwk.crv !== "Ed25519") return "kty must be OKP and crv Ed25519";
  const raw = b64url(jwk.x, 32);
  if (!raw) return "x must be 32 bytes in unpadded base64url";
  const le = Buffer.from(raw);
  le[31] &= 0x7f;
  const y = BigInt("0x" + Buffer.from(le).reverse().toString("hex"));
  if (y >= P || WEAK.has(y)) return "x is a non-canonical encoding or a point of small order";
  try {
    return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  } catch (err) {
    return "not an Ed25519 public key: " + err.message;
  }
}

function verifySig(key, msg, sig) {
  const raw = b64url(sig, 64);
  return raw !== null && edVerify(null, msg, key, raw);
}

// RFC 7638 thumbprint of an OKP key.
const thumbprint = (k) => createHash("sha256").update(`{"crv":"${k.crv}","kty":"${k.kty}","x":"${k.x}"}`).digest("base64url");

// parseJWKS mirrors the Go reader: non-Ed25519 keys are skipped, a usable
// key needs a kid, and a set needs at least one.
function parseJWKS(bytes) {
  const set = parseStrict(bytes);
  if (!set || !Array.isArray(set.keys)) throw new Error("not a JWKS");
  const out = new Map();
  set.keys.forEach((k, i) => {
    if (!k || k.kty !== "OKP" || k.crv !== "Ed25519") return;
    const key = publicKey(k);
    if (typeof key === "string") throw new Error(`key ${i}: ${key}`);
    if (typeof k.kid !== "string" || k.kid === "") throw new Error(`key ${i} has no kid`);
    out.set(k.kid, key);
  });
  if (out.size === 0) throw new Error("the JWKS holds no Ed25519 key");
  return out;
}

// verifyRecord runs every check and returns {passed, failed, skipped}, each a
// list of [check, message].
export function verifyRecord(recordBytes, { artifact = null, keys = null, messages = [] } = {}) {
  const rep = { passed: [], failed: [], skipped: [] };
  const pass = (c, m) => rep.passed.push([c, m]);
  const fail = (c, m) => rep.failed.push([c, m]);
  const failedSince = (n, c) => rep.failed.slice(n).some(([x]) => x === c);

  let r;
  try {
    r = parseStrict(recordBytes);
  } catch (err) {
    fail("format", "not one unambiguous JSON document (duplicate member, lone surrogate or syntax): " + err.message);
    return rep;
  }
  const shape = checkShape(r);
  if (shape.length) {
    for (const e of shape.slice(0, 8)) fail("format", "not a consensus-record/v1 document: " + e);
    return rep;
  }
  pass("format", `consensus-record/v1, ${r.participants.length} participants, ${r.events.length} events`);

  // revisions: every one, 1 to n; the final one (last) gives the roster and the deadline
  const terms = checkRevisions(r, { pass, fail, failedSince, count: () => rep.failed.length });
  const rev = r.revisions[r.revisions.length - 1].canonical;
  const final = rev.revision;

  // roster
  let n = rep.failed.length;
  const roster = new Map(), invitations = new Set(), keysOf = new Map();
  if (r.participants.length !== rev.participants.length) fail("roster", `${r.participants.length} participants, the final revision has ${rev.participants.length}`);
  r.participants.forEach((p, i) => {
    const w = rev.participants[i];
    if (w && (p.participant_id !== w.participant_id || p.display_name !== w.display_name || p.kind !== w.kind || p.required !== w.required))
      fail("roster", `participant ${i + 1} is ${p.participant_id}, the final revision has ${w.participant_id} (or its name, kind or required flag differ)`);
    if (roster.has(p.participant_id)) fail("roster", `participant ${p.participant_id} is listed twice`);
    if (invitations.has(p.invitation_id)) fail("roster", `invitation ${p.invitation_id} is listed for two participants`);
    roster.set(p.participant_id, p);
    invitations.add(p.invitation_id);
    if (p.public_key === null) return;
    const key = publicKey(p.public_key);
    if (typeof key === "string") return fail("roster", `participant ${p.participant_id}: the public key is not a usable Ed25519 key: ${key}`);
    if (p.binding_digest === null) fail("roster", `participant ${p.participant_id} has a public key but no binding`);
    keysOf.set(p.participant_id, key);
  });
  if (!failedSince(n, "roster")) pass("roster", `${r.participants.length} participants as in the final revision, ${keysOf.size} with a bound key`);

  // events
  n = rep.failed.length;
  let prev = ZERO, signed = 0, lastRevision = 0;
  const decisions = [];
  const signatures = new Map(); // each signature seen, to the event that first carried it
  const actionsById = new Map(); // the action of each earlier event
  r.events.forEach((e, i) => {
    const at = `event ${i + 1} (seq ${e.seq}, id ${e.id})`;
    const c = e.command, p = roster.get(c.participant_id);
    // version 2 is what a keyed participant signs: it binds the Idempotency-Key, so a signature speaks for one event
    if (c.schema !== `${r.issuer}/schemas/room-command/v${c.version}`) fail("command", `${at}: schema ${c.schema} is not room-command/v${c.version} on the issuer's origin`);
    if (c.version === 2 && p && p.public_key === null) fail("command", `${at}: is a room-command/v2, which only a participant that bound a key signs; participant ${c.participant_id} bound none`);
    if (c.agreement_id !== r.agreement_id) fail("command", `${at}: agreement_id is ${c.agreement_id}, the record's is ${r.agreement_id}`);
    // the command names a revision the record holds, by number and by that revision's digest
    const named = r.revisions[c.revision - 1];
    if (!named || named.number !== c.revision) fail("command", `${at}: names revision ${c.revision}, the record holds revisions 1 to ${r.revisions.length}`);
    else if (c.revision_digest !== named.revision_digest) fail("command", `${at}: names revision ${c.revision} with digest ${c.revision_digest}, revision ${c.revision}'s digest is ${named.revision_digest}`);
    else if (!named.canonical.participants.some((x) => x.participant_id === c.participant_id)) fail("command", `${at}: participant ${c.participant_id} is not on revision ${c.revision}'s roster`);
    if (c.revision < lastRevision) fail("command", `${at}: names revision ${c.revision} after an event on revision ${lastRevision}; revisions only advance`);
    lastRevision = Math.max(lastRevision, c.revision);
    if (!p) fail("command", `${at}: participant ${c.participant_id} is not on the roster`);
    else if (c.invitation_id !== p.invitation_id) fail("command", `${at}: invitation_id ${c.invitation_id} is not participant ${c.participant_id}'s`);
    else if (p.binding_digest === null) fail("command", `${at}: participant ${c.participant_id} never claimed its slot, so it cannot have posted`);
    const bodyErr = checkCommandBody(c.action, c.body);
    if (bodyErr) fail("command", `${at}: ${bodyErr}`);
    // to: on a question or change_request only, participants of the named
    // revision other than the author; in_reply_to: on a comment only, an
    // earlier question or change_request of the record
    if ("to" in c) {
      if (c.action !== "question" && c.action !== "change_request") fail("command", `${at}: carries to, which only a question or change_request may`);
      else if (named && named.number === c.revision) {
        for (const id of c.to) {
          if (id === c.participant_id) fail("command", `${at}: to names its own author ${id}`);
          else if (!named.canonical.participants.some((x) => x.participant_id === id)) fail("command", `${at}: to names ${id}, not on revision ${c.revision}'s roster`);
        }
      }
    }
    if ("in_reply_to" in c) {
      const target = actionsById.get(c.in_reply_to);
      if (c.action !== "comment") fail("command", `${at}: carries in_reply_to, which only a comment may`);
      else if (target !== "question" && target !== "change_request") fail("command", `${at}: in_reply_to ${c.in_reply_to} names no earlier question or change_request of the record`);
    }
    actionsById.set(e.id, c.action);
    if (isTerminal(c.action)) {
      // admitted only when no earlier decision of the participant counts on this revision
      const standing = decisions.find((d) => d.participant === c.participant_id && carriesOver(terms, d.revision, c.revision));
      if (standing) fail("command", `${at}: participant ${c.participant_id} already has a decision that counts on revision ${c.revision} (event ${standing.id}, made on revision ${standing.revision})`);
      decisions.push({ id: e.id, participant: c.participant_id, revision: c.revision });
    }
    const msg = utf8(canonicalize(c));
    const cmdDigest = sha256(msg);
    if (cmdDigest !== e.command_digest) fail("command-digest", `${at}: the command hashes to ${cmdDigest}, the event states ${e.command_digest}`);
    if (e.seq !== i + 1) fail("chain", `${at}: seq is ${e.seq}, want ${i + 1}`);
    if (e.prev !== prev) fail("chain", `${at}: prev is ${e.prev}, the previous event's hash is ${prev}`);
    const link = sha256(utf8(canonicalize({ command_digest: e.command_digest, created_at: e.created_at, prev: e.prev, seq: e.seq })));
    if (link !== e.hash) fail("chain", `${at}: hash is ${e.hash}, {command_digest, created_at, prev, seq} hashes to ${link}`);
    prev = e.hash;
    if (e.signature !== null) {
      if (signatures.has(e.signature)) fail("participant-signature", `${at}: repeats the signature of ${signatures.get(e.signature)}; a participant signs each event once, so the same signature on a second event is a replay`);
      else signatures.set(e.signature, at);
    }
    if (!p) return;
    const key = keysOf.get(p.participant_id);
    if (p.public_key === null && e.signature !== null) fail("participant-signature", `${at}: carries a signature, but participant ${p.participant_id} bound no key`);
    else if (p.public_key === null || !key) return;
    else if (e.signature === null) fail("participant-signature", `${at}: participant ${p.participant_id} bound a key, but the event carries no signature`);
    else if (!verifySig(key, msg, e.signature)) fail("participant-signature", `${at}: the signature does not verify with participant ${p.participant_id}'s bound key ${thumbprint(p.public_key)}`);
    else signed++;
  });
  if (!failedSince(n, "command")) pass("command", `${r.events.length} commands name this agreement, a revision it holds with its digest, and their participant's invitation`);
  if (!failedSince(n, "command-digest")) pass("command-digest", `${r.events.length} command digests recompute`);
  if (!failedSince(n, "chain")) pass("chain", `${r.events.length} links recompute from 64 zeros`);
  if (!failedSince(n, "participant-signature")) pass("participant-signature", `events signed with the author's bound key: ${signed}; by participants without a key: ${r.events.length - signed}`);
  checkEvidence(r, { pass, fail, failedSince, count: () => rep.failed.length }, messages);
  if (r.chain_head !== prev) fail("chain-head", `chain_head is ${r.chain_head}, the last event's hash is ${prev}`);
  else pass("chain-head", prev);
  if (r.event_count !== r.events.length) fail("event-count", `event_count is ${r.event_count}, the record holds ${r.events.length} events`);
  else pass("event-count", String(r.event_count));

  // outcome
  n = rep.failed.length;
  const deadline = instant(rev.deadline);
  const events = r.events.map((e) => ({ id: e.id, seq: e.seq, participant: e.command.participant_id, revision: e.command.revision, action: e.command.action, createdAt: instant(e.created_at) }));
  const rule = ruleWords(rev.decision_rule, r.participants.filter((p) => p.required).length);
  const got = evaluate(final, terms, r.participants.map((p) => ({ id: p.participant_id, required: p.required })), events, deadline, instant(r.issued_at), rev.decision_rule);
  const st = r.outcome;
  const stDeciding = st.deciding_event_id ?? "";
  if (got.status !== st.status || got.decidingEventId !== stDeciding || (got.status !== "pending" && got.decidedAt !== instant(st.decided_at)))
    fail("outcome", `by ${rule} under the revision rule the events give ${got.status}${got.decidingEventId ? " by event " + got.decidingEventId : ""}, the record states ${st.status}${stDeciding ? " by event " + stDeciding : ""} at ${st.decided_at}`);
  const last = got.decidingEventId ? events.find((e) => e.id === got.decidingEventId).seq : 0;
  for (const e of events) {
    if (e.createdAt >= deadline) fail("outcome", `event seq ${e.seq} was created at or after the deadline ${rev.deadline}, when the room had closed`);
    if (got.decidingEventId && e.seq > last) fail("outcome", `event seq ${e.seq} follows the deciding event, when the room had closed`);
  }
  if (!failedSince(n, "outcome")) pass("outcome", `${st.status} follows from the events by ${rule} on revision ${final}`);

  // artifact
  n = rep.failed.length;
  const reached = st.status === "reached";
  if (reached !== (r.artifact_sha256 !== null)) fail("artifact", `outcome ${st.status} with artifact_sha256 ${r.artifact_sha256}: only a reached outcome has CONSENSUS.md`);
  if (artifact === null) rep.skipped.push(["artifact", `no artifact given; the record states sha256 ${r.artifact_sha256}`]);
  else if (r.artifact_sha256 === null) fail("artifact", `an artifact was given, but the record has none (outcome ${st.status})`);
  else if (sha256(artifact) !== r.artifact_sha256) fail("artifact", `the artifact hashes to ${sha256(artifact)}, the record states ${r.artifact_sha256}`);
  if (artifact !== null && !failedSince(n, "artifact")) pass("artifact", `CONSENSUS.md hashes to ${r.artifact_sha256}`);

  // service signature
  if (keys === null) {
    rep.skipped.push(["service-signature", `no JWKS given: nothing shows the issuer issued this record (give the keys from ${r.issuer}/.well-known/consensus-keys)`]);
  } else if (!keys.has(r.signature.kid)) {
    fail("service-signature", `kid ${r.signature.kid} is not in the given JWKS`);
  } else {
    const unsigned = Object.fromEntries(Object.entries(r).filter(([k]) => k !== "signature"));
    if (verifySig(keys.get(r.signature.kid), utf8(canonicalize(unsigned)), r.signature.value)) pass("service-signature", `Ed25519 by key ${r.signature.kid}`);
    else fail("service-signature", `the signature does not verify with key ${r.signature.kid} over the record's canonical bytes`);
  }
  return rep;
}

export const failedChecks = (rep) => CHECKS.filter((c) => rep.failed.some(([x]) => x === c));

export function formatReport(rep) {
  const lines = [];
  for (const c of CHECKS) {
    for (const [x, m] of rep.failed) if (x === c) lines.push(`FAIL ${c}: ${m}`);
    for (const [x, m] of rep.passed) if (x === c) lines.push(`ok   ${c}: ${m}`);
    for (const [x, m] of rep.skipped) if (x === c) lines.push(`skip ${c}: ${m}`);
  }
  if (rep.failed.length) lines.push(`RESULT: FAILED (${failedChecks(rep).join(", ")})`);
  else if (!rep.passed.some(([c]) => c === "service-signature")) lines.push("RESULT: CONSISTENT, NOT AUTHENTICATED: every check ran passed, but the service signature was not checked");
  else lines.push("RESULT: VERIFIED");
  return lines.join("\n") + "\n";
}

function conformance(dir) {
  const manifest = parseStrict(readFileSync(join(dir, "manifest.json")));
  let differ = 0;
  for (const v of manifest.vectors) {
    const rep = verifyRecord(readFileSync(join(dir, v.record)), {
      artifact: v.artifact === null ? null : readFileSync(join(dir, v.artifact)),
      keys: parseJWKS(readFileSync(join(dir, v.keys))),
    });
    const got = failedChecks(rep);
    const verified = got.length === 0 && formatReport(rep).endsWith("RESULT: VERIFIED\n");
    const same = got.join(",") === v.expect.join(",") && (v.expect.length > 0 || verified);
    if (!same) {
      differ++;
      process.stdout.write(`DIFF ${v.name}: failed [${got.join(", ")}], want [${v.expect.join(", ")}]\n${formatReport(rep)}`);
    } else {
      process.stdout.write(`ok   ${v.name}: ${got.length ? "fails " + got.join(", ") : "verifies"}\n`);
    }
  }
  const proofs = manifest.proofs ?? [];
  for (const v of proofs) {
    const res = verifyProof(parseProof(readFileSync(join(dir, v.proof))), {
      record: readFileSync(join(dir, v.record)), logKey: parseVerifierKey(v.logKey),
      witnesses: v.witnesses.map(parseWitnessKey), minCosignatures: v.minCosignatures,
    });
    const got = PROOF_CHECKS.filter((c) => res.checks.some(([x, ok]) => x === c && !ok));
    if (got.join(",") !== v.expect.join(",") || (v.expect.length === 0 && res.checks.length !== PROOF_CHECKS.length)) {
      differ++;
      process.stdout.write(`DIFF ${v.name}: failed [${got.join(", ")}], want [${v.expect.join(", ")}]\n${formatProof(res, {})}`);
    } else {
      process.stdout.write(`ok   ${v.name}: ${got.length ? "fails " + got.join(", ") : "verifies"}\n`);
    }
  }
  process.stdout.write(`conformance: ${manifest.vectors.length} vectors, ${proofs.length} proof vectors, ${differ} differ\n`);
  return differ ? 1 : 0;
}

function main(argv) {
  const usage = "usage: node tools/verify-record.mjs RECORD.json [--artifact CONSENSUS.md] [--keys JWKS] [--message REPLY.eml]... " +
    "[--proof PROOF.json [--log-key VKEY] [--witness NAME=KEY]... [--witnesses N]] | --conformance DIR";
  const opts = { message: [], witness: [] };
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--message" || a === "--witness") {
      if (i + 1 >= argv.length) return fail(usage);
      opts[a.slice(2)].push(argv[++i]);
    } else if (["--artifact", "--keys", "--conformance", "--proof", "--log-key", "--witnesses"].includes(a)) {
      if (i + 1 >= argv.length) return fail(usage);
      opts[a.slice(2)] = argv[++i];
    } else if (a.startsWith("-")) return fail(usage);
    else files.push(a);
  }
  function fail(msg) {
    process.stderr.write(msg + "\n");
    return 2;
  }
  if (opts.conformance) return files.length ? fail(usage) : conformance(opts.conformance);
  if (files.length !== 1) return fail(usage);
  if (!opts.proof && (opts["log-key"] || opts.witness.length || opts.witnesses)) return fail("--log-key, --witness and --witnesses check a --proof\n" + usage);
  let keys = null, logKey = null, witnesses = [], min = opts.witness.length;
  if (opts.keys) {
    try {
      keys = parseJWKS(readFileSync(opts.keys));
    } catch (err) {
      process.stderr.write(`${opts.keys}: ${err.message}\n`);
      return 1;
    }
  }
  if (opts.proof) {
    try {
      witnesses = opts.witness.map(parseWitnessKey);
      if (opts.witnesses !== undefined) {
        if (!/^(0|[1-9][0-9]*)$/.test(opts.witnesses)) throw new Error(`--witnesses ${opts.witnesses} is not a count`);
        min = Number(opts.witnesses);
      }
      if (min > witnesses.length) throw new Error(`--witnesses ${min} wants more cosignatures than the ${witnesses.length} --witness given`);
      let vkey = opts["log-key"];
      if (!vkey && opts.keys) vkey = parseStrict(readFileSync(opts.keys)).log?.verifierKey;
      if (typeof vkey !== "string") throw new Error("give --log-key VKEY, or --keys with the log member of /.well-known/consensus-keys");
      logKey = parseVerifierKey(vkey);
    } catch (err) {
      return fail(err.message + "\n" + usage);
    }
  }
  const record = readFileSync(files[0]);
  const rep = verifyRecord(record, { artifact: opts.artifact ? readFileSync(opts.artifact) : null, keys, messages: opts.message.map((f) => readFileSync(f)) });
  process.stdout.write(formatReport(rep));
  if (!opts.proof) return rep.failed.length ? 1 : 0;
  let proof;
  try {
    proof = parseProof(readFileSync(opts.proof));
  } catch (err) {
    process.stderr.write(`${opts.proof}: ${err.message}\n`);
    return 1;
  }
  const res = verifyProof(proof, { record, logKey, witnesses, minCosignatures: min });
  process.stdout.write(formatProof(res, proof));
  return rep.failed.length || res.checks.some(([, ok]) => !ok) ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
