// The DKIM evidence of events read from reply emails, re-checked offline:
// the signature over the stored signed header fields with the stored key
// record, the DKIM-Signature field's tags against the evidence, the signed
// From against the evidence's from, and the relaxed alignment of d= with
// its domain. Mirrors internal/record/evidence.go.
import { createHash, createPublicKey, verify } from "node:crypto";

const strip = (s) => s.replace(/[ \t\r\n]/g, "");

function tags(s) {
  const out = new Map();
  for (const part of s.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    out.set(strip(part.slice(0, i)), strip(part.slice(i + 1)));
  }
  return out;
}

// fields splits canonicalized header bytes into fields (a line break
// followed by a space or tab continues one).
function fields(s) {
  const out = [];
  while (s.length) {
    let end = 0;
    for (;;) {
      const i = s.indexOf("\r\n", end);
      if (i < 0) { end = s.length; break; }
      end = i + 2;
      if (end >= s.length || (s[end] !== " " && s[end] !== "\t")) break;
    }
    out.push(s.slice(0, end).replace(/\r\n$/, ""));
    s = s.slice(end);
  }
  return out;
}

// aligned: equal, or one a parent of the other at a label boundary.
export function aligned(signer, domain) {
  const s = signer.toLowerCase().replace(/\.$/, ""), d = domain.toLowerCase().replace(/\.$/, "");
  if (!s.includes(".") || !d.includes(".")) return false;
  return s === d || s.endsWith("." + d) || d.endsWith("." + s);
}

// address reads the addr-spec of a From value: the part in angle brackets,
// else the whole value.
function address(v) {
  const m = /<([^<>]*)>\s*$/.exec(v);
  return (m ? m[1] : v).trim().toLowerCase();
}

export function checkEvidenceOf(e) {
  const d = e.dkim;
  if (d.result !== "pass") return "the DKIM result is not pass";
  const fs = fields(d.signed_headers);
  if (!fs.length) return "signed_headers is empty";
  const last = fs[fs.length - 1], colon = last.indexOf(":");
  if (colon < 0 || last.slice(0, colon).trim().toLowerCase() !== "dkim-signature") return "signed_headers does not end with the DKIM-Signature field";
  const t = tags(last.slice(colon + 1));
  for (const [k, want] of [["d", d.domain], ["s", d.selector], ["a", d.algorithm], ["bh", d.body_hash], ["b", ""]]) {
    const got = t.get(k);
    if (got === undefined || (k === "bh" ? got !== want : got.toLowerCase() !== want.toLowerCase())) return `the DKIM-Signature tag ${k}= does not match the evidence`;
  }
  if (t.has("l")) return "the DKIM-Signature has a body length tag (l=)";
  let from = "";
  for (const f of fs.slice(0, -1)) {
    const i = f.indexOf(":");
    if (i > 0 && f.slice(0, i).trim().toLowerCase() === "from") from = address(f.slice(i + 1).replace(/\r\n/g, ""));
  }
  if (!from || from !== e.from.toLowerCase()) return "from is not the signed From field";
  if (!aligned(d.domain, from.slice(from.lastIndexOf("@") + 1))) return `the DKIM domain ${d.domain} does not align with the From domain`;
  const kt = tags(d.key_record);
  if (kt.has("v") && kt.get("v") !== "DKIM1") return "the key record is not v=DKIM1";
  const raw = Buffer.from(kt.get("p") ?? "", "base64");
  if (!raw.length) return "the key record has no p= key";
  let key;
  try {
    const k = kt.get("k") ?? "rsa";
    if (k === "ed25519") {
      if (d.algorithm !== "ed25519-sha256" || raw.length !== 32) return "the algorithm does not fit the key record";
      key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
    } else if (k === "rsa") {
      if (d.algorithm !== "rsa-sha256") return "the algorithm does not fit the key record";
      try {
        key = createPublicKey({ key: raw, format: "der", type: "spki" });
      } catch {
        key = createPublicKey({ key: raw, format: "der", type: "pkcs1" });
      }
    } else return `the key record has an unknown key type k=${k}`;
  } catch (err) {
    return "the key record's key does not parse: " + err.message;
  }
  const hashed = createHash("sha256").update(Buffer.from(d.signed_headers, "utf8")).digest();
  const sig = Buffer.from(strip(d.signature), "base64");
  const ok = d.algorithm === "ed25519-sha256" ? verify(null, hashed, key, sig) : verify("sha256", Buffer.from(d.signed_headers, "utf8"), key, sig);
  return ok ? null : "the DKIM signature does not verify";
}

// checkEvidence checks every event's evidence and ties each raw reply
// message given to the event whose evidence names its SHA-256.
export function checkEvidence(r, { pass, fail, failedSince, count }, messages = []) {
  const n = count();
  let seen = 0;
  r.events.forEach((e, i) => {
    if (!e.evidence) return;
    seen++;
    if (e.command.action === "question" || e.command.action === "change_request") fail("reply-evidence", `event ${i + 1} (seq ${e.seq}): a reply records only decisions and comments`);
    const err = checkEvidenceOf(e.evidence);
    if (err) fail("reply-evidence", `event ${i + 1} (seq ${e.seq}): ${err}`);
  });
  if (seen && !failedSince(n, "reply-evidence")) pass("reply-evidence", `${seen} event${seen === 1 ? "" : "s"} read from replies: each DKIM signature verifies over its signed header fields with the key record stored, and aligns with its From`);
  const m = count();
  messages.forEach((raw, i) => {
    const h = createHash("sha256").update(raw).digest("hex");
    if (!r.events.some((e) => e.evidence && e.evidence.raw_sha256 === h)) fail("reply-evidence", `message ${i + 1}: its SHA-256 is the raw_sha256 of no event's evidence`);
  });
  if (messages.length && !failedSince(m, "reply-evidence")) pass("reply-evidence", `${messages.length} message${messages.length === 1 ? "" : "s"} given: each is the raw message of an event's evidence`);
}
