package agentclient

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

const testAgreement = "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"

// locked builds revision n and the room part that shows it.
func locked(t *testing.T, n int, objective, deadline string, names ...string) (room.Revision, *Room) {
	t.Helper()
	r := room.Revision{Schema: "https://consensus.md/schemas/agreement/v1", AgreementID: testAgreement, Revision: n,
		Title: "Ship", Objective: objective, Rules: []string{"No weekend deploys."}, DecisionRule: room.DecisionRule,
		Deadline: deadline, LockedAt: "2026-12-01T00:00:00Z", Issuer: "https://consensus.md"}
	for i, name := range names {
		r.Participants = append(r.Participants, room.Participant{ParticipantID: string(rune('a' + i)), DisplayName: name, Kind: room.KindAgent, Required: true})
	}
	l, err := room.Lock(r)
	if err != nil {
		t.Fatal(err)
	}
	rm := &Room{AgreementID: testAgreement}
	rm.Revision.Number, rm.Revision.RevisionDigest, rm.Revision.MarkdownDigest, rm.Revision.TermsDigest = n, l.RevisionDigest, l.MarkdownDigest, l.TermsDigest
	rm.Revision.CanonicalRevision, rm.Revision.Markdown = json.RawMessage(l.Canonical), l.Markdown
	rm.Revisions = []RevisionSummary{{Number: n, RevisionDigest: l.RevisionDigest, TermsDigest: l.TermsDigest}}
	return r, rm
}

func TestVerifyRevision(t *testing.T) {
	t.Parallel()
	_, r1 := locked(t, 1, "Ship on Tuesday.", "2026-12-31T00:00:00Z", "Alice")
	rec := &Record{InvitationID: "inv", AgreementID: testAgreement}
	if err := rec.adopt(r1); err != nil {
		t.Fatal(err)
	}
	if c, err := verifyRevision(rec, r1); c != nil || err != nil {
		t.Fatalf("the revision on record: %v %v", c, err)
	}
	history := func(next *Room) *Room {
		next.Revisions = append([]RevisionSummary{r1.Revisions[0]}, next.Revisions...)
		return next
	}

	_, later := locked(t, 2, "Ship on Tuesday.", "2027-01-31T00:00:00Z", "Alice", "Bob")
	c, err := verifyRevision(rec, history(later))
	if err != nil || c == nil || c.TermsChanged || c.From != 1 || c.To != 2 || c.PreviousDeadline != "2026-12-31T00:00:00Z" ||
		len(c.Added) != 1 || c.Added[0] != "Bob" || !strings.Contains(c.String(), "still counts") {
		t.Fatalf("deadline and roster: %+v %v", c, err)
	}

	_, changed := locked(t, 2, "Ship on Thursday.", "2026-12-31T00:00:00Z", "Alice")
	c, err = verifyRevision(rec, history(changed))
	if err != nil || !c.TermsChanged || !c.Objective || c.Title || c.Rules || !strings.Contains(c.String(), "stale") {
		t.Fatalf("objective: %+v %v", c, err)
	}

	var ve *VerifyError
	for name, bad := range map[string]func() *Room{
		"revision digest": func() *Room {
			_, r := locked(t, 2, "x", "2026-12-31T00:00:00Z")
			r.Revision.RevisionDigest = strings.Repeat("0", 64)
			return history(r)
		},
		"markdown": func() *Room {
			_, r := locked(t, 2, "x", "2026-12-31T00:00:00Z")
			r.Revision.Markdown += " "
			return history(r)
		},
		"terms digest": func() *Room {
			_, r := locked(t, 2, "x", "2026-12-31T00:00:00Z")
			r.Revision.TermsDigest = r1.Revision.TermsDigest
			return history(r)
		},
		"history lost": func() *Room { _, r := locked(t, 2, "x", "2026-12-31T00:00:00Z"); return r },
		"history rewritten": func() *Room {
			_, r := locked(t, 2, "x", "2026-12-31T00:00:00Z")
			r = history(r)
			r.Revisions[0].RevisionDigest = strings.Repeat("1", 64)
			return r
		},
		"number on record, other digest": func() *Room { _, r := locked(t, 1, "Other.", "2026-12-31T00:00:00Z", "Alice"); return r },
		"number in canonical": func() *Room {
			_, r := locked(t, 2, "x", "2026-12-31T00:00:00Z")
			r.Revision.Number = 3
			return history(r)
		},
	} {
		if _, err := verifyRevision(rec, bad()); !errors.As(err, &ve) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	ahead := *rec
	ahead.RevisionNumber = 2
	if _, err := verifyRevision(&ahead, r1); !errors.As(err, &ve) {
		t.Errorf("a room going back from revision 2 to 1: %v", err)
	}

	if err := rec.adopt(history(changed)); err != nil || rec.RevisionNumber != 2 || rec.TermsDigest != changed.Revision.TermsDigest ||
		rec.RevisionDigest != changed.Revision.RevisionDigest || canon.Digest([]byte(changed.Revision.Markdown)) != rec.MarkdownDigest {
		t.Fatalf("adopt: %+v %v", rec, err)
	}
}
