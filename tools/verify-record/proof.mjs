// consensus-log-proof/v1 verification (SPEC R-LOG-PROOF) on the standard
// library only, written from the specifications and sharing no code with the
// Go verifier (internal/translog): RFC 6962 leaf and node hashes, the RFC 9162
// §2.1.3.2 inclusion check, C2SP signed-note and tlog-checkpoint parsing, the
// log's Ed25519 note signature and C2SP tlog-cosignature/v1 cosignatures.
// The checks are named as in Go: leaf, leaf-matches-record, log-signature,
// inclusion, cosignatures.
import { createHash, createPublicKey, verify as edVerify } from "node:crypto";
import { parseStrict, canonicalize } from "./json.mjs";

export const PROOF_CHECKS = ["leaf", "leaf-matches-record", "log-signature", "inclusion", "cosignatures"];
const PROOF_TYPE = "consensus-log-proof/v1";
const PROOF_MEMBERS = ["checkpoint", "inclusionProof", "leaf", "leafIndex", "logKey", "type"];
const LEAF_MEMBERS = ["agreementId", "at", "chainHead", "digest", "kind", "revision", "seq", "type"];
const HEX64 = /^[0-9a-f]{64}$/;

const sha256 = (...parts) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};

// Standard base64 in its one canonical spelling, or null.
function b64(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const b = Buffer.from(s, "base64");
  return b.toString("base64") === s ? b : null;
}

const wellFormed = (s) => Buffer.from(s, "utf8").toString("utf8") === s; // no lone surrogate
const validName = (name) => typeof name === "string" && name !== "" && !/[\s+]/u.test(name) && wellFormed(name);

// A signed-note key: name, its 32-bit key hash, the algorithm (0x01 Ed25519
// note signature, 0x04 tlog-cosignature/v1) and the Ed25519 public key.
function noteKey(name, alg, raw) {
  if (!validName(name)) throw new Error(`${JSON.stringify(name)} cannot name a note key`);
  if (raw.length !== 32) throw new Error("the public key is not 32 bytes");
  const hash = sha256(Buffer.from(name + "\n", "utf8"), Buffer.from([alg]), raw).readUInt32BE(0);
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  return { name, alg, hash, key, id: `${name}+${hash.toString(16).padStart(8, "0")}` };
}

// parseVerifierKey reads name+hash+base64(alg || key), checking the hash.
export function parseVerifierKey(vkey) {
  const m = /^([^+]*)\+([0-9a-fA-F]{8})\+(.*)$/s.exec(vkey);
  const raw = m && b64(m[3]);
  if (!raw || raw.length !== 33) throw new Error(`malformed verifier key ${JSON.stringify(vkey)}`);
  if (raw[0] !== 0x01 && raw[0] !== 0x04) throw new Error(`verifier key ${vkey}: unknown algorithm ${raw[0]}`);
  const k = noteKey(m[1], raw[0], raw.subarray(1));
  if (k.hash !== parseInt(m[2], 16)) throw new Error(`verifier key ${vkey}: the key hash does not match`);
  return k;
}

// parseWitnessKey reads NAME=base64(32-byte key), a tlog-cosignature/v1
// key, or a whole verifier key.
export function parseWitnessKey(s) {
  const eq = s.indexOf("=");
  if (eq >= 0 && !s.slice(0, eq).includes("+")) {
    const raw = b64(s.slice(eq + 1));
    if (!raw || raw.length !== 32 || !validName(s.slice(0, eq))) throw new Error(`witness ${JSON.stringify(s)}: want NAME=base64 of a 32-byte Ed25519 key, or a verifier key`);
    return noteKey(s.slice(0, eq), 0x04, raw);
  }
  return parseVerifierKey(s);
}

// verifyNoteSig checks a signature (key hash removed) over a note's text.
function verifyNoteSig(k, text, sig) {
  if (k.alg === 0x01) return sig.length === 64 && edVerify(null, Buffer.from(text, "utf8"), k.key, sig);
  if (sig.length !== 72) return false;
  const t = sig.readBigUInt64BE(0);
  return edVerify(null, Buffer.from(`cosignature/v1\ntime ${t}\n${text}`, "utf8"), k.key, sig.subarray(8));
}

// parseNote splits a C2SP signed note into its text and signature lines
// ({name, hash, sig, line}), or throws.
function parseNote(note) {
  if (typeof note !== "string" || !wellFormed(note) || /[\x00-\x09\x0b-\x1f]/.test(note)) throw new Error("the checkpoint is not a signed note");
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n") || split + 2 === note.length) throw new Error("the checkpoint is not a signed note");
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  if (lines.length > 100) throw new Error("the checkpoint has too many signatures");
  const sigs = lines.map((line) => {
    const m = /^\u2014 ([^ ]*) (.*)$/u.exec(line);
    const raw = m && b64(m[2]);
    if (!m || !validName(m[1]) || !raw || raw.length < 5) throw new Error("the checkpoint has a malformed signature line");
    return { name: m[1], hash: raw.readUInt32BE(0), sig: raw.subarray(4), line };
  });
  return { text, sigs };
}

// parseCheckpoint reads origin, size and root (extension lines ignored).
function parseCheckpoint(text) {
  const lines = text.split("\n");
  const root = lines.length >= 4 ? b64(lines[2]) : null;
  if (lines.length < 4 || lines[0] === "" || !/^(0|[1-9][0-9]*)$/.test(lines[1]) || !root || root.length !== 32)
    throw new Error("the signed note is not a tlog-checkpoint (origin, size and root lines)");
  return { origin: lines[0], size: Number(lines[1]), root };
}

// recordLeaf derives the record leaf of record bytes.
function recordLeaf(bytes) {
  const r = parseStrict(bytes);
  if (!r || !Array.isArray(r.revisions) || r.revisions.length === 0) throw new Error("not a consensus-record/v1");
  return { agreementId: r.agreement_id, at: r.issued_at, chainHead: r.chain_head, digest: sha256(bytes).toString("hex"),
    kind: "record", revision: r.revisions[r.revisions.length - 1].number, seq: r.event_count, type: "consensus-log-leaf/v1" };
}

function leafError(l) {
  if (l === null || typeof l !== "object" || Array.isArray(l)) return "the leaf is not an object";
  const names = Object.keys(l).sort();
  if (names.join() !== LEAF_MEMBERS.join()) return `the leaf has members ${names.join(", ")}, want ${LEAF_MEMBERS.join(", ")}`;
  if (l.type !== "consensus-log-leaf/v1") return `type ${JSON.stringify(l.type)}`;
  if (typeof l.agreementId !== "string" || l.agreementId === "" || typeof l.at !== "string" || l.at === "" || !Number.isSafeInteger(l.revision) || l.revision < 1)
    return "agreementId, revision and at are required";
  if (l.kind !== "record") return `the leaf is a ${JSON.stringify(l.kind)} leaf, not a record leaf`;
  if (!Number.isSafeInteger(l.seq) || l.seq < 0 || !HEX64.test(l.chainHead) || !HEX64.test(l.digest)) return "a record leaf has seq, chainHead and digest";
  return null;
}

// inclusion is RFC 9162 §2.1.3.2: the root computed from the leaf hash at
// index in a tree of size leaves along the proof, or null when the proof
// has the wrong length.
function inclusionRoot(index, size, leafHash, proof) {
  let fn = index, sn = size - 1, r = leafHash;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = sha256(Buffer.from([1]), p, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      r = sha256(Buffer.from([1]), r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

// parseProof reads a bundle strictly, or throws.
export function parseProof(bytes) {
  const p = parseStrict(bytes);
  if (p === null || typeof p !== "object" || Array.isArray(p)) throw new Error(`not a ${PROOF_TYPE} bundle`);
  const names = Object.keys(p).sort();
  if (names.join() !== PROOF_MEMBERS.join()) throw new Error(`not a ${PROOF_TYPE} bundle: members ${names.join(", ")}`);
  if (p.type !== PROOF_TYPE || !Number.isSafeInteger(p.leafIndex) || !Array.isArray(p.inclusionProof) || !p.inclusionProof.every((h) => typeof h === "string") ||
    typeof p.checkpoint !== "string" || typeof p.logKey !== "string") throw new Error(`not a ${PROOF_TYPE} bundle`);
  return p;
}

// verifyProof runs the checks of a parsed bundle against the record bytes,
// the trusted log key and the named witnesses; it returns the checks run,
// in order, each [name, ok, detail], and what it found.
export function verifyProof(p, { record = null, logKey, witnesses = [], minCosignatures = 0 }) {
  const checks = [];
  const add = (name, err, passed) => (checks.push([name, err === null, err ?? passed]), err === null);
  const leafBytes = Buffer.from(canonicalize(p.leaf), "utf8");
  const leafErr = leafError(p.leaf);
  if (add("leaf", leafErr, `a record leaf of agreement ${p.leaf?.agreementId}, revision ${p.leaf?.revision}`) && record !== null) {
    let err = null;
    try {
      const want = recordLeaf(record);
      const diff = ["digest", "agreementId", "revision", "seq", "chainHead", "at"].filter((k) => p.leaf[k] !== want[k]);
      if (diff.length) err = `the leaf does not describe this record: ${diff.join(", ")} differ`;
    } catch (e) {
      err = "the record gives no leaf: " + e.message;
    }
    add("leaf-matches-record", err, "its digest, agreement, revision, seq, chain head and instant are the record's");
  }
  let note, cp;
  try {
    note = parseNote(p.checkpoint);
    const own = note.sigs.find((s) => s.name === logKey.name && s.hash === logKey.hash);
    if (!own) throw new Error(`the checkpoint is not signed by the log's key ${logKey.id}`);
    if (!verifyNoteSig(logKey, note.text, own.sig)) throw new Error(`the log's signature ${logKey.id} does not verify`);
    cp = parseCheckpoint(note.text);
    if (cp.origin !== logKey.name) throw new Error(`the checkpoint's origin ${JSON.stringify(cp.origin)} is not the log key's name ${JSON.stringify(logKey.name)}`);
  } catch (e) {
    add("log-signature", e.message);
    return { checks, checkpoint: null, cosigned: [] };
  }
  add("log-signature", null, `Ed25519 by ${logKey.id} over a checkpoint of ${cp.size} leaves`);

  let inc = null;
  const hashes = p.inclusionProof.map(b64);
  if (p.leafIndex < 0 || p.leafIndex >= cp.size) inc = `leaf index ${p.leafIndex} is outside a tree of ${cp.size} leaves`;
  else if (hashes.some((h) => !h || h.length !== 32)) inc = "an inclusion proof hash is not a base64 SHA-256";
  else {
    const root = inclusionRoot(p.leafIndex, cp.size, sha256(Buffer.from([0]), leafBytes), hashes);
    if (!root || !root.equals(cp.root)) inc = `the proof does not lead from leaf ${p.leafIndex} to the checkpoint's root`;
  }
  add("inclusion", inc, `leaf ${p.leafIndex} leads to the root of the checkpoint's ${cp.size} leaves`);

  const cosigned = [], refused = [], seen = new Set();
  if (witnesses.length === 0 && minCosignatures === 0) return { checks, checkpoint: cp, cosigned };
  for (const w of witnesses) {
    if (seen.has(w.id) || w.id === logKey.id) continue;
    seen.add(w.id);
    const lines = note.sigs.filter((s) => s.name === w.name && s.hash === w.hash);
    if (lines.some((s) => verifyNoteSig(w, note.text, s.sig))) cosigned.push(w.name);
    else if (lines.length) refused.push(w.id);
  }
  let err = null;
  if (cosigned.length < minCosignatures) {
    err = `${cosigned.length} of the named witnesses cosigned (${cosigned.join(", ")}), at least ${minCosignatures} wanted`;
    if (refused.length) err += `; the cosignature of ${refused.join(", ")} does not verify`;
  }
  add("cosignatures", err, `${cosigned.length} of at least ${minCosignatures}: ${cosigned.join(", ")}`);
  return { checks, checkpoint: cp, cosigned };
}

// formatProof prints the checks as the Go verifier does, then a PROOF line.
export function formatProof(res, p) {
  const lines = res.checks.map(([name, ok, detail]) => `${ok ? "ok  " : "FAIL"} ${name}: ${detail}`);
  const failed = res.checks.filter(([, ok]) => !ok).map(([name]) => name);
  if (failed.length) lines.push(`PROOF: FAILED (${failed.join(", ")})`);
  else lines.push(`PROOF: VERIFIED: leaf ${p.leafIndex} of ${res.checkpoint.size} in ${res.checkpoint.origin}` + (res.cosigned.length ? `, cosigned by ${res.cosigned.join(", ")}` : ", no witness named"));
  return lines.join("\n") + "\n";
}
