// A fresh agent with nothing but Node: it downloads the published verifier
// and checks its SHA-256 against the capabilities document, downloads a
// finished room's record, CONSENSUS.md and the service's keys, and runs the
// verifier on them, then on a copy with one byte changed; it also downloads
// every conformance file the index lists and runs the vectors. It prints
// one JSON line of what happened.
//
//   node kit-download.mjs ORIGIN RECORD_PATH ARTIFACT_PATH TOKEN DIR
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [origin, recordPath, artifactPath, token, dir] = process.argv.slice(2);
const sha256 = (b) => createHash("sha256").update(b).digest("hex");
async function get(url, headers = {}) {
  const r = await fetch(url, { headers });
  if (r.status !== 200) throw new Error(`${url}: HTTP ${r.status}`);
  return Buffer.from(await r.arrayBuffer());
}
const auth = { Authorization: "Consensus-Participant " + token };

const caps = JSON.parse(await get(origin + "/.well-known/consensus-agent"));
const sig = caps.offered.signatures;
const verifier = await get(sig.verifierUrl);
const script = join(dir, "verify-record.mjs");
writeFileSync(script, verifier);
writeFileSync(join(dir, "record.json"), await get(origin + recordPath, auth));
writeFileSync(join(dir, "CONSENSUS.md"), await get(origin + artifactPath, auth));
writeFileSync(join(dir, "keys.json"), await get(sig.keys));
const record = await get(origin + recordPath, auth);
const changed = Buffer.from(record);
const at = changed.indexOf("Kit room");
changed[at + 7] = "n".charCodeAt(0); // "Kit room" -> "Kit roon"
writeFileSync(join(dir, "changed.json"), changed);

const run = (...args) => {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });
  return { status: r.status, out: r.stdout + r.stderr };
};
const files = (rec) => [join(dir, rec), "--artifact", join(dir, "CONSENSUS.md"), "--keys", join(dir, "keys.json")];

const index = JSON.parse(await get(sig.conformance));
const vectors = join(dir, "vectors");
mkdirSync(vectors);
let filesOK = index.verifier.sha256 === sha256(verifier);
for (const f of index.files) {
  const b = await get(f.href);
  filesOK &&= sha256(b) === f.sha256 && b.length === f.bytes;
  writeFileSync(join(vectors, f.name), b);
}
console.log(JSON.stringify({
  verifierSha256: sha256(verifier), statedSha256: sig.verifierSha256, indexFilesMatch: filesOK, files: index.files.length,
  original: run(...files("record.json")), changed: run(...files("changed.json")), conformance: run("--conformance", vectors),
}));
