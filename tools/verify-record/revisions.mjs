// The revision checks of the standard-library verifier: a record lists every
// locked revision, 1 to n in order, the final one last. Each must belong to
// the record, keep the roster of the one before it (a revision only adds
// participants), ask for no larger quorum than it has required
// participants, and hash to its stated revision, Markdown and terms
// digests. The terms digests recomputed here, never the stated ones, are
// what the decision rule compares.
import { createHash } from "node:crypto";
import { canonicalize } from "./json.mjs";

const sha256 = (s) => createHash("sha256").update(Buffer.from(s, "utf8")).digest("hex");

// termsOf returns the four members of a canonical revision that a decision
// is about; a change to any of them makes earlier decisions stale.
const termsOf = (c) => ({ decision_rule: c.decision_rule, objective: c.objective, rules: c.rules, title: c.title });

const sameParticipant = (a, b) =>
  a.participant_id === b.participant_id && a.display_name === b.display_name && a.kind === b.kind && a.required === b.required;

// checkRevisions reports the revision, revision-digest, markdown-digest and
// terms-digest checks and returns the recomputed terms digests by number.
export function checkRevisions(r, { pass, fail, failedSince, count }) {
  let n = count();
  r.revisions.forEach((rv, i) => {
    const c = rv.canonical;
    if (rv.number !== i + 1) fail("revision", `revisions[${i}] is number ${rv.number}, want ${i + 1} (revisions are listed 1, 2, ... in order)`);
    if (c.revision !== rv.number) fail("revision", `revisions[${i}]: the canonical revision is number ${c.revision}, the record says ${rv.number}`);
    if (c.agreement_id !== r.agreement_id) fail("revision", `revision ${rv.number} is of agreement ${c.agreement_id}, the record of ${r.agreement_id}`);
    if (c.issuer !== r.issuer) fail("revision", `revision ${rv.number} was issued by ${c.issuer}, the record names ${r.issuer}`);
    if (i > 0) {
      const before = r.revisions[i - 1].canonical.participants;
      if (c.participants.length < before.length || before.some((p, j) => !sameParticipant(p, c.participants[j])))
        fail("revision", `revision ${rv.number} does not keep revision ${i}'s participants, in order and unchanged (a revision only adds participants)`);
    }
    const k = typeof c.decision_rule === "object" ? c.decision_rule.agree : 0;
    const required = c.participants.filter((p) => p.required).length;
    if (k > required) fail("revision", `revision ${rv.number}: its quorum of ${k} is more than its ${required} required participants`);
  });
  if (r.schema !== r.issuer + "/schemas/consensus-record/v1") fail("revision", `schema is ${r.schema}, not on the issuer's origin`);
  if (!failedSince(n, "revision")) pass("revision", `agreement ${r.agreement_id}, revisions 1 to ${r.revisions.length}, issuer ${r.issuer}`);

  n = count();
  const terms = new Map();
  for (const rv of r.revisions) {
    const revDigest = sha256(canonicalize(rv.canonical));
    if (revDigest !== rv.revision_digest) fail("revision-digest", `revision ${rv.number}: the canonical revision hashes to ${revDigest}, the record states ${rv.revision_digest}`);
    const mdDigest = sha256(rv.markdown);
    if (mdDigest !== rv.markdown_digest) fail("markdown-digest", `revision ${rv.number}: the Markdown hashes to ${mdDigest}, the record states ${rv.markdown_digest}`);
    const termsDigest = sha256(canonicalize(termsOf(rv.canonical)));
    if (termsDigest !== rv.terms_digest) fail("terms-digest", `revision ${rv.number}: {decision_rule, objective, rules, title} hashes to ${termsDigest}, the record states ${rv.terms_digest}`);
    terms.set(rv.canonical.revision, termsDigest);
  }
  const last = r.revisions[r.revisions.length - 1];
  if (!failedSince(n, "revision-digest")) pass("revision-digest", `${r.revisions.length} revision digests recompute; the final one is ${last.revision_digest}`);
  if (!failedSince(n, "markdown-digest")) pass("markdown-digest", `${r.revisions.length} Markdown digests recompute; the final one is ${last.markdown_digest}`);
  if (!failedSince(n, "terms-digest")) pass("terms-digest", `${r.revisions.length} terms digests recompute`);
  return terms;
}
