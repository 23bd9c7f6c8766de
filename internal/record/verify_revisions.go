package record

import (
	"fmt"
	"strings"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// checkRevisions: the revisions are numbered 1 to n in order, each
// canonical object names this record's agreement, its own number and the
// issuer, the record's schema is on that issuer, each revision keeps the
// roster of the one before it (a revision only adds participants) and asks
// for no larger quorum than it has required participants, and
// every revision, Markdown and terms digest recomputes. The recomputed
// terms digests are what the decision rule compares later, never the
// stated ones.
func (v *verification) checkRevisions() {
	r, n := v.rec, len(v.rep.Failed)
	for i, rev := range v.revisions {
		stated := r.Revisions[i]
		if stated.Number != i+1 {
			v.rep.fail(CheckRevision, "revisions[%d] is number %d, want %d (revisions are listed 1, 2, ... in order)", i, stated.Number, i+1)
		}
		if rev.Revision != stated.Number {
			v.rep.fail(CheckRevision, "revisions[%d]: the canonical revision is number %d, the record says %d", i, rev.Revision, stated.Number)
		}
		if rev.AgreementID != r.AgreementID {
			v.rep.fail(CheckRevision, "revision %d is of agreement %s, the record of %s", stated.Number, rev.AgreementID, r.AgreementID)
		}
		if rev.Issuer != r.Issuer {
			v.rep.fail(CheckRevision, "revision %d was issued by %s, the record names %s", stated.Number, rev.Issuer, r.Issuer)
		}
		if i > 0 && !keepsRoster(v.revisions[i-1].Participants, rev.Participants) {
			v.rep.fail(CheckRevision, "revision %d does not keep revision %d's participants, in order and unchanged (a revision only adds participants)", stated.Number, i)
		}
		if k, required := rev.DecisionRule.Agree, room.RequiredCount(rev); k > required {
			v.rep.fail(CheckRevision, "revision %d: its quorum of %d is more than its %d required participants", stated.Number, k, required)
		}
	}
	if want := fmt.Sprintf(SchemaFmt, r.Issuer); r.Schema != want {
		v.rep.fail(CheckRevision, "schema is %s, want %s on the issuer's origin", r.Schema, want)
	}
	if !v.rep.failedSince(n, CheckRevision) {
		v.rep.pass(CheckRevision, "agreement %s, revisions 1 to %d, issuer %s", r.AgreementID, len(r.Revisions), r.Issuer)
	}
	v.checkRevisionDigests()
}

// keepsRoster reports whether next begins with every participant of prev,
// in the same order and with the same fields.
func keepsRoster(prev, next []room.Participant) bool {
	if len(next) < len(prev) {
		return false
	}
	for i, p := range prev {
		if next[i] != p {
			return false
		}
	}
	return true
}

// checkRevisionDigests recomputes each revision's three digests and keeps
// the terms digests it computed for the decision rule.
func (v *verification) checkRevisionDigests() {
	n := len(v.rep.Failed)
	for i, stated := range v.rec.Revisions {
		c, err := canon.Transform(stated.Canonical)
		switch got := canon.Digest(c); {
		case err != nil:
			v.rep.fail(CheckRevisionDigest, "revision %d: the canonical revision cannot be canonicalized: %v", stated.Number, err)
		case got != stated.RevisionDigest:
			v.rep.fail(CheckRevisionDigest, "revision %d: the canonical revision hashes to %s, the record states %s", stated.Number, got, stated.RevisionDigest)
		}
		if got := canon.Digest([]byte(stated.Markdown)); got != stated.MarkdownDigest {
			v.rep.fail(CheckMarkdownDigest, "revision %d: the Markdown hashes to %s, the record states %s", stated.Number, got, stated.MarkdownDigest)
		}
		got, err := room.TermsDigest(v.revisions[i])
		switch {
		case err != nil:
			v.rep.fail(CheckTermsDigest, "revision %d: the terms cannot be canonicalized: %v", stated.Number, err)
		case got != stated.TermsDigest:
			v.rep.fail(CheckTermsDigest, "revision %d: {decision_rule, objective, rules, title} hashes to %s, the record states %s", stated.Number, got, stated.TermsDigest)
		}
		v.terms[v.revisions[i].Revision] = got
	}
	last := v.rec.Final()
	if !v.rep.failedSince(n, CheckRevisionDigest) {
		v.rep.pass(CheckRevisionDigest, "%d revision digests recompute; the final one is %s", len(v.rec.Revisions), last.RevisionDigest)
	}
	if !v.rep.failedSince(n, CheckMarkdownDigest) {
		v.rep.pass(CheckMarkdownDigest, "%d Markdown digests recompute; the final one is %s", len(v.rec.Revisions), last.MarkdownDigest)
	}
	if !v.rep.failedSince(n, CheckTermsDigest) {
		v.rep.pass(CheckTermsDigest, "%d terms digests recompute; %s", len(v.rec.Revisions), v.termsSummary())
	}
}

// termsSummary says which revisions share the final revision's terms.
func (v *verification) termsSummary() string {
	final := v.revision.Revision
	var same []string
	for _, r := range v.revisions {
		if r.Revision != final && v.terms[r.Revision] == v.terms[final] {
			same = append(same, fmt.Sprint(r.Revision))
		}
	}
	if len(same) == 0 {
		return fmt.Sprintf("only decisions made on revision %d count", final)
	}
	return fmt.Sprintf("decisions made on revisions %s and %d count (same terms)", strings.Join(same, ", "), final)
}

// revisionOf returns the revision a command names, if the record holds it.
func (v *verification) revisionOf(number int) (Revision, room.Revision, bool) {
	if number < 1 || number > len(v.rec.Revisions) || v.rec.Revisions[number-1].Number != number {
		return Revision{}, room.Revision{}, false
	}
	return v.rec.Revisions[number-1], v.revisions[number-1], true
}
