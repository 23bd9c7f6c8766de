// The structure of consensus-record/v1 and of the agreement/v1 object it
// embeds, checked by hand (the standard library has no JSON Schema
// validator). It mirrors schemas/consensus-record/v1.json and
// schemas/agreement/v1.json; checkShape returns a list of problems.
import { instant } from "./rule.mjs";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HEX = /^[0-9a-f]{64}$/;
const SECONDS = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$/;
const SIG = /^[A-Za-z0-9_-]{86}$/;
const KEY = /^[A-Za-z0-9_-]{43}$/;
const ORIGIN = /^https?:\/\/[^/?#]+$/;

export function checkShape(r) {
  const errs = [];
  const bad = (path, msg) => errs.push(`at ${path}: ${msg}`);
  const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  // object checks that v is an object with exactly the members listed;
  // a member marked optional may be missing.
  function object(v, path, members) {
    if (!isObj(v)) return bad(path, "must be an object"), false;
    for (const k of Object.keys(v)) if (!(k in members)) bad(path, `unknown member ${k}`);
    let ok = true;
    for (const [k, check] of Object.entries(members)) {
      if (!(k in v)) {
        if (check.optional) continue;
        bad(path, `missing member ${k}`);
        ok = false;
      } else if (check(v[k], `${path}/${k}`) === false) ok = false;
    }
    return ok;
  }
  const str = (re, min = 0, max = Infinity) => (v, path) => {
    if (typeof v !== "string") return bad(path, "must be a string"), false;
    const n = [...v].length;
    if (n < min || n > max) return bad(path, `must be ${min} to ${max} characters`), false;
    if (re && !re.test(v)) return bad(path, "does not match its pattern"), false;
  };
  const time = (re) => (v, path) => {
    if (str(re)(v, path) === false) return false;
    if (instant(v) === null) return bad(path, "is not a valid instant"), false;
  };
  const int = (min) => (v, path) => {
    if (!Number.isInteger(v) || v < min) return bad(path, `must be an integer of at least ${min}`), false;
  };
  const intIn = (min, max) => (v, path) => {
    if (!Number.isInteger(v) || v < min || v > max) return bad(path, `must be an integer from ${min} to ${max}`), false;
  };
  const constant = (c) => (v, path) => {
    if (v !== c) return bad(path, `must be ${JSON.stringify(c)}`), false;
  };
  const oneOf = (...cs) => (v, path) => {
    if (!cs.includes(v)) return bad(path, `must be one of ${cs.join(", ")}`), false;
  };
  const bool = (v, path) => {
    if (typeof v !== "boolean") return bad(path, "must be a boolean"), false;
  };
  const nullable = (check) => (v, path) => (v === null ? undefined : check(v, path));
  const array = (item, min = 0, max = Infinity) => (v, path) => {
    if (!Array.isArray(v)) return bad(path, "must be an array"), false;
    if (v.length < min || v.length > max) return bad(path, `must hold ${min} to ${max} items`), false;
    let ok = true;
    v.forEach((x, i) => {
      if (item(x, `${path}/${i}`) === false) ok = false;
    });
    return ok;
  };
  const members = (m) => (v, path) => object(v, path, m);
  const optional = (check) => Object.assign((v, path) => check(v, path), { optional: true });
  const distinct = (check) => (v, path) => {
    if (check(v, path) === false) return false;
    if (new Set(v).size !== v.length) return bad(path, "must not repeat an item"), false;
  };
  const uuid = str(UUID), hex = str(HEX);
  // An event read from a reply email carries an evidence member; any other
  // event has exactly the members m.
  const evidence = members({
    kind: constant("dkim-reply"), message_id: str(null), raw_sha256: str(HEX), from: str(null),
    dkim: members({
      result: constant("pass"), domain: str(null), selector: str(null), algorithm: oneOf("rsa-sha256", "ed25519-sha256"),
      body_hash: str(null), signature: str(null), signed_headers: str(null), key_record: str(null),
    }),
  });
  const withEvidence = (m) => (v, path) => (isObj(v) && "evidence" in v ? object(v, path, { ...m, evidence }) : object(v, path, m));
  const jwk = members({ kty: constant("OKP"), crv: constant("Ed25519"), x: str(KEY) });
  const agreement = members({
    schema: str(/^https?:\/\/[^/?#]+\/schemas\/agreement\/v1$/), agreement_id: uuid, revision: int(1),
    title: str(null, 1, 200), objective: str(null, 1, 4000), rules: array(str(null, 1, 1000), 0, 50),
    participants: array(members({ participant_id: uuid, display_name: str(null, 1, 200), kind: oneOf("agent", "human"), required: bool }), 1, 50),
    decision_rule: (v, path) => (typeof v === "string" ? constant("unanimity-of-required")(v, path)
      : members({ agree: intIn(1, 50), type: constant("quorum") })(v, path)), deadline: time(SECONDS), locked_at: time(SECONDS), issuer: str(ORIGIN),
  });
  const commandV1 = {
    schema: str(/^https?:\/\/[^/?#]+\/schemas\/room-command\/v1$/), version: constant(1), agreement_id: uuid, invitation_id: uuid,
    participant_id: uuid, revision: int(1), revision_digest: hex,
    action: oneOf("comment", "question", "change_request", "agree", "disagree", "abstain"), body: str(null, 0, 4000),
    to: optional(distinct(array(uuid, 1, 50))), in_reply_to: optional(uuid),
  };
  // room-command/v2, a keyed participant's signed command, adds the Idempotency-Key it was posted under.
  const commandV2 = {
    ...commandV1, schema: str(/^https?:\/\/[^/?#]+\/schemas\/room-command\/v2$/), version: constant(2), idempotency_key: str(/^[A-Za-z0-9._:-]{8,128}$/),
  };
  const command = (v, path) => object(v, path, isObj(v) && v.version === 2 ? commandV2 : commandV1);
  object(r, "", {
    schema: str(/^https?:\/\/[^/?#]+\/schemas\/consensus-record\/v1$/), version: constant(1), agreement_id: uuid,
    issuer: str(ORIGIN), issued_at: time(null),
    revisions: array(members({
      number: int(1), canonical: agreement, revision_digest: hex, markdown: str(null), markdown_digest: hex, terms_digest: hex,
    }), 1),
    participants: array(members({
      participant_id: uuid, display_name: str(null), kind: oneOf("agent", "human"), required: bool, invitation_id: uuid,
      binding_digest: nullable(hex), public_key: nullable(jwk),
    }), 1, 50),
    events: array(withEvidence({
      id: uuid, seq: int(1), command, command_digest: hex, created_at: time(null), prev: hex, hash: hex, signature: nullable(str(SIG)),
    })),
    outcome: members({ status: oneOf("reached", "disagreed", "no_consensus", "expired"), decided_at: time(null), deciding_event_id: nullable(uuid) }),
    artifact_sha256: nullable(hex), chain_head: hex, event_count: int(0),
    signature: members({ kid: str(KEY), alg: constant("Ed25519"), value: str(SIG) }),
  });
  return errs;
}
