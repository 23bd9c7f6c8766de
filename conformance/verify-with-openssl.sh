#!/usr/bin/env bash
# Verifies every revision's revision and terms digests, one command digest,
# one participant signature and the service signature of a
# consensus-record/v1 with standard tools only:
# openssl (pkeyutl -verify -rawin), sha256sum, base64, and python3's json
# module as the RFC 8785 encoder (json.dumps with sort_keys, compact
# separators and ensure_ascii=False equals JCS for these objects: ASCII keys,
# integers only). No Consensus code is involved.
#
#   conformance/verify-with-openssl.sh RECORD.json JWKS.json
#
# Exit status 0 when all five checks pass, 1 otherwise.
set -uo pipefail
record=$1 jwks=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One python3 run cuts what the checks need out of the record into files:
# canonical bytes (*.json), stated digests and base64url values (*.txt).
python3 - "$record" "$jwks" "$work" <<'PY' || exit 1
import json, sys
record, jwks, out = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
def jcs(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
def put(name, text):
    with open(out + "/" + name, "w", encoding="utf-8", newline="") as f:
        f.write(text)
# every revision, in order: its canonical bytes and its terms, the four
# members {decision_rule, objective, rules, title} of the canonical object
for n, r in enumerate(record["revisions"], 1):
    c = r["canonical"]
    put("revision-%d.json" % n, jcs(c))
    put("revision-%d-digest.txt" % n, r["revision_digest"])
    put("terms-%d.json" % n, jcs({k: c[k] for k in ("decision_rule", "objective", "rules", "title")}))
    put("terms-%d-digest.txt" % n, r["terms_digest"])
put("revisions.txt", str(len(record["revisions"])))
# the first event whose author bound a key (else the first event, whose
# command digest is still checked; a room where nobody bound a key has no
# participant signature to check)
signed = [(i, e) for i, e in enumerate(record["events"]) if e["signature"]]
first = signed[0] if signed else next(enumerate(record["events"]), None)
if first:
    i, e = first
    put("event.txt", "event %d by %s" % (i + 1, e["command"]["participant_id"]))
    put("command.json", jcs(e["command"]))
    put("command-digest.txt", e["command_digest"])
if signed:
    author = next(p for p in record["participants"] if p["participant_id"] == e["command"]["participant_id"])
    put("command-sig.txt", e["signature"])
    put("participant-x.txt", author["public_key"]["x"])
# the service signature covers the record without its signature member
put("record.json", jcs({k: v for k, v in record.items() if k != "signature"}))
put("record-sig.txt", record["signature"]["value"])
put("kid.txt", record["signature"]["kid"])
put("service-x.txt", next((k["x"] for k in jwks["keys"] if k.get("kid") == record["signature"]["kid"]), ""))
PY

# b64url_decode FILE: unpadded base64url to bytes on stdout.
b64url_decode() {
  local s
  s=$(tr -- '-_' '+/' < "$1")
  while (( ${#s} % 4 )); do s+='='; done
  printf '%s' "$s" | base64 -d
}
# pem_of XFILE OUT: an Ed25519 public key (JWK x) as a PEM SubjectPublicKeyInfo:
# the fixed 12-byte DER prefix of RFC 8410, then the 32 key bytes.
pem_of() {
  { printf '\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00'; b64url_decode "$1"; } > "$work/key.der"
  openssl pkey -pubin -inform DER -in "$work/key.der" -out "$2" 2>/dev/null
}
status=0
check() { # EXIT-STATUS NAME
  if [[ $1 -eq 0 ]]; then echo "ok   $2"; else echo "FAIL $2"; status=1; fi
}

# digests_match KIND: every revision's KIND json hashes to its stated digest.
digests_match() {
  local n got
  for ((n = 1; n <= $(cat "$work/revisions.txt"); n++)); do
    got=$(sha256sum < "$work/$1-$n.json" | cut -d' ' -f1)
    [[ $got == "$(cat "$work/$1-$n-digest.txt")" ]] || return 1
  done
}
digests_match revision
check $? "revision-digest of $(cat "$work/revisions.txt") revisions"
digests_match terms
check $? "terms-digest of $(cat "$work/revisions.txt") revisions"

if [[ -s $work/command.json ]]; then
  got=$(sha256sum < "$work/command.json" | cut -d' ' -f1)
  [[ $got == "$(cat "$work/command-digest.txt")" ]]
  check $? "command-digest of $(cat "$work/event.txt") $got"
else
  echo "skip command-digest (the record has no events)"
fi

if [[ -s $work/command-sig.txt ]]; then
  b64url_decode "$work/command-sig.txt" > "$work/command.sig"
  pem_of "$work/participant-x.txt" "$work/participant.pem" &&
    openssl pkeyutl -verify -pubin -inkey "$work/participant.pem" -rawin -in "$work/command.json" -sigfile "$work/command.sig" >/dev/null 2>&1
  check $? "participant-signature of $(cat "$work/event.txt")"
else
  echo "skip participant-signature (no participant bound a key)"
fi

b64url_decode "$work/record-sig.txt" > "$work/record.sig"
[[ -s $work/service-x.txt ]] && pem_of "$work/service-x.txt" "$work/service.pem" &&
  openssl pkeyutl -verify -pubin -inkey "$work/service.pem" -rawin -in "$work/record.json" -sigfile "$work/record.sig" >/dev/null 2>&1
check $? "service-signature by key $(cat "$work/kid.txt")"
exit $status
