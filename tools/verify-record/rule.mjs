// The rules a record must follow, written again, independently of the
// service, for the standard-library verifier: instants, command bodies, and the decision rules
// (unanimity of the required participants, or a quorum of k of them) with
// the revision rule: a decision made on an earlier revision counts exactly
// when that revision's terms digest equals the current one's.

const INSTANT = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?Z$/;

// instant returns an RFC 3339 UTC instant in nanoseconds since the epoch as
// a BigInt (microseconds matter: a Date keeps milliseconds), or null.
export function instant(s) {
  const m = typeof s === "string" && INSTANT.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number);
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > days || h > 23 || mi > 59 || sec > 59) return null;
  const ms = Date.UTC(y, mo - 1, d, h, mi, sec);
  return BigInt(ms) * 1000000n + BigInt((m[7] ?? "").padEnd(9, "0"));
}

export const isTerminal = (a) => a === "agree" || a === "disagree" || a === "abstain";
export const isAdvisory = (a) => a === "comment" || a === "question" || a === "change_request";

// checkCommandBody: advisory bodies hold 1 to 4,000 code points and no NUL;
// terminal ones are empty. It returns a message or null.
export function checkCommandBody(action, body) {
  if (isTerminal(action)) return body === "" ? null : `body must be empty for the terminal action ${action}`;
  if (!isAdvisory(action)) return `unknown action ${action}`;
  const n = [...body].length;
  if (n < 1 || n > 4000) return `body must be 1 to 4000 characters (got ${n})`;
  if (body.includes("\u0000")) return "body must not contain NUL characters";
  return null;
}

// carriesOver says whether a decision made on revision made counts on
// revision current: the same revision, or an earlier one whose terms digest
// (recomputed from its canonical object; terms maps number to digest) is
// the current one's. A later revision never counts on an earlier one.
export function carriesOver(terms, made, current) {
  if (made === current) return true;
  return made < current && terms.has(made) && terms.has(current) && terms.get(made) === terms.get(current);
}

// countingDecision returns the terminal event of participant p that counts
// on revision current: the first, in seq order, made on a revision that
// carries over. Once a decision counts it is never replaced; decisions made
// on revisions with other terms are stale and skipped. events are in seq order.
export function countingDecision(terms, events, p, current) {
  return events.find((e) => e.participant === p && isTerminal(e.action) && carriesOver(terms, e.revision, current)) ?? null;
}

// quorumOf returns k for a decision_rule {"type": "quorum", "agree": k}, or
// 0 for "unanimity-of-required".
export const quorumOf = (rule) => (typeof rule === "object" && rule !== null && rule.type === "quorum" ? rule.agree : 0);

// ruleWords names a rule for a report: "unanimity-of-required", or
// "quorum (2 of the 3 required participants must agree)".
export function ruleWords(rule, requiredCount) {
  const k = quorumOf(rule);
  if (!k) return "unanimity-of-required";
  return `quorum (${k} of the ${requiredCount} required participant${requiredCount === 1 ? "" : "s"} must agree)`;
}

// evaluate applies the decision rule of revision current (the final one,
// whose roster, deadline and decision_rule are given) to each required
// participant's counting decision, when made before the deadline, in seq
// order; the first terminal fact wins.
//   - "unanimity-of-required": a disagreement gives disagreed, an
//     abstention no_consensus, the last missing agreement reached.
//   - {"type": "quorum", "agree": k}: the k-th agreement gives reached; a
//     disagreement or abstention never becomes an agreement, so the
//     decision after which the agreements plus the required participants
//     still without a counting decision are fewer than k gives disagreed.
// Otherwise expired once now reaches the deadline, else pending. Instants
// are BigInt nanoseconds.
export function evaluate(current, terms, roster, events, deadline, now, rule = "unanimity-of-required") {
  const ordered = [...events].sort((a, b) => a.seq - b.seq);
  const required = roster.filter((m) => m.required).map((m) => m.id);
  const counted = required
    .map((id) => countingDecision(terms, ordered, id, current))
    .filter((e) => e !== null && e.createdAt < deadline)
    .sort((a, b) => a.seq - b.seq);
  const k = quorumOf(rule);
  let agreed = 0, undecided = required.length;
  for (const e of counted) {
    const settled = { decidedAt: e.createdAt, decidingEventId: e.id };
    undecided--;
    if (e.action === "agree") agreed++;
    if (k > 0) {
      if (agreed >= k) return { status: "reached", ...settled };
      if (agreed + undecided < k) return { status: "disagreed", ...settled };
      continue;
    }
    if (e.action === "disagree") return { status: "disagreed", ...settled };
    if (e.action === "abstain") return { status: "no_consensus", ...settled };
    if (agreed === required.length) return { status: "reached", ...settled };
  }
  if (now >= deadline) return { status: "expired", decidedAt: deadline, decidingEventId: "" };
  return { status: "pending", decidedAt: null, decidingEventId: "" };
}
