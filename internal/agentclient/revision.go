package agentclient

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// RevisionChange is what a newly locked revision changed, once verified.
type RevisionChange struct {
	InvitationID string
	From, To     int
	// TermsChanged: the terms digest differs from the one of the revision
	// the runtime knew; a decision made on that revision is stale.
	TermsChanged bool
	// Title, Objective, Rules and DecisionRule say which terms changed;
	// they are known when the record holds the previous canonical revision.
	Title, Objective, Rules    bool
	DecisionRule               bool
	PreviousDeadline, Deadline string
	Added                      []string
}

// String says in one line what changed and what it means for a decision.
func (c *RevisionChange) String() string {
	var what []string
	for _, t := range []struct {
		on   bool
		name string
	}{{c.Title, "the title"}, {c.Objective, "the objective"}, {c.Rules, "the rules"}, {c.DecisionRule, "the decision rule"}} {
		if t.on {
			what = append(what, t.name)
		}
	}
	if c.TermsChanged && len(what) == 0 {
		what = append(what, "the terms")
	}
	if c.PreviousDeadline != "" && c.PreviousDeadline != c.Deadline {
		what = append(what, fmt.Sprintf("the deadline (%s, was %s)", c.Deadline, c.PreviousDeadline))
	}
	for _, name := range c.Added {
		what = append(what, fmt.Sprintf("participant %q added", name))
	}
	if len(what) == 0 {
		what = append(what, "nothing this runtime can name")
	}
	effect := "the terms did not change: a decision made earlier still counts"
	if c.TermsChanged {
		effect = "the terms changed: a decision made earlier is stale and must be made again"
	}
	return fmt.Sprintf("revision %d of %s locked (was %d): changed %s; %s", c.To, c.InvitationID, c.From, strings.Join(what, ", "), effect)
}

// verifyRevision checks the room's revision the way Accept checked the
// exchanged one: revisionDigest is the SHA-256 of the RFC 8785 bytes of
// canonicalRevision, markdownDigest of the markdown, termsDigest of the
// terms; the canonical revision names this agreement and that number. A
// revision newer than the record's must also leave the record's revision,
// with the digest verified then, in the room's history. It returns the
// change when the revision is new (nil when it is the one on record) and
// *VerifyError when anything does not match; the record is not touched.
func verifyRevision(rec *Record, r *Room) (*RevisionChange, error) {
	rv := r.Revision
	c, err := canon.Transform(rv.CanonicalRevision)
	if err != nil {
		return nil, &VerifyError{"the room's canonicalRevision is not valid JSON"}
	}
	if d, err := canon.ParseDigest(rv.RevisionDigest); err != nil || d != canon.Digest(c) {
		return nil, &VerifyError{"the room's revisionDigest does not match its canonical revision"}
	}
	if d, err := canon.ParseDigest(rv.MarkdownDigest); err != nil || d != canon.Digest([]byte(rv.Markdown)) {
		return nil, &VerifyError{"the room's markdownDigest does not match its markdown"}
	}
	var now room.Revision
	if err := json.Unmarshal(rv.CanonicalRevision, &now); err != nil || now.AgreementID != rec.AgreementID || now.Revision != rv.Number {
		return nil, &VerifyError{"the room's canonical revision names another agreement or revision number"}
	}
	terms := termsOf(rv.CanonicalRevision)
	if terms == "" || (rv.TermsDigest != "" && rv.TermsDigest != terms) {
		return nil, &VerifyError{"the room's termsDigest does not match its canonical revision"}
	}
	switch {
	case rv.Number == rec.RevisionNumber:
		if d, _ := canon.ParseDigest(rec.RevisionDigest); d != canon.Digest(c) {
			return nil, &VerifyError{fmt.Sprintf("revision %d no longer has the digest verified when it was claimed", rv.Number)}
		}
		return nil, nil
	case rv.Number < rec.RevisionNumber:
		return nil, &VerifyError{fmt.Sprintf("the room went back from revision %d to %d", rec.RevisionNumber, rv.Number)}
	}
	i := slices.IndexFunc(r.Revisions, func(s RevisionSummary) bool { return s.Number == rec.RevisionNumber })
	if d, _ := canon.ParseDigest(rec.RevisionDigest); i < 0 || r.Revisions[i].RevisionDigest != d {
		return nil, &VerifyError{fmt.Sprintf("the room's history no longer lists revision %d with the digest verified before", rec.RevisionNumber)}
	}
	change := &RevisionChange{InvitationID: rec.InvitationID, From: rec.RevisionNumber, To: rv.Number, Deadline: now.Deadline,
		TermsChanged: r.Revisions[i].TermsDigest != terms}
	var before room.Revision
	if len(rec.CanonicalRevision) > 0 && json.Unmarshal(rec.CanonicalRevision, &before) == nil {
		change.Title, change.Objective = before.Title != now.Title, before.Objective != now.Objective
		change.Rules = !slices.Equal(before.Rules, now.Rules)
		change.DecisionRule = before.DecisionRule != now.DecisionRule
		change.PreviousDeadline = before.Deadline
		known := map[string]bool{}
		for _, p := range before.Participants {
			known[p.ParticipantID] = true
		}
		for _, p := range now.Participants {
			if !known[p.ParticipantID] {
				change.Added = append(change.Added, p.DisplayName)
			}
		}
	}
	return change, nil
}

// adopt records a verified new revision as the one the runtime knows.
func (rec *Record) adopt(r *Room) error {
	var now room.Revision
	if err := json.Unmarshal(r.Revision.CanonicalRevision, &now); err != nil {
		return err
	}
	digest, err := canon.ParseDigest(r.Revision.RevisionDigest)
	if err != nil {
		return err
	}
	markdown, err := canon.ParseDigest(r.Revision.MarkdownDigest)
	if err != nil {
		return err
	}
	rec.RevisionNumber, rec.RevisionDigest, rec.MarkdownDigest, rec.TermsDigest = r.Revision.Number, digest, markdown, termsOf(r.Revision.CanonicalRevision)
	rec.CanonicalRevision, rec.Title = append(json.RawMessage(nil), r.Revision.CanonicalRevision...), now.Title
	return nil
}

// termsOf is the terms digest of a canonical revision, "" when it cannot be
// read (the revision digest check has then failed already).
func termsOf(canonical json.RawMessage) string {
	var r room.Revision
	if json.Unmarshal(canonical, &r) != nil {
		return ""
	}
	d, err := room.TermsDigest(r)
	if err != nil {
		return ""
	}
	return d
}

// emailRevisionLinked checks the exchanged revision (number x.RevisionNumber,
// recomputed digest rev) against the one the invitation email names: the
// same revision, or a later one whose history still lists the email's
// revision with the email's digest, so the email vouches for the chain.
func emailRevisionLinked(number int, digest string, x *Exchanged, rev string) error {
	switch {
	case x.RevisionNumber == number:
		if rev != digest {
			return &VerifyError{"the revision differs from the one the email names"}
		}
		return nil
	case x.RevisionNumber < number:
		return &VerifyError{"revisionNumber is older than the email's"}
	}
	i := slices.IndexFunc(x.Revisions, func(s RevisionSummary) bool { return s.Number == number })
	last := len(x.Revisions) - 1
	if i < 0 || x.Revisions[i].RevisionDigest != digest || last < 0 || x.Revisions[last].Number != x.RevisionNumber || x.Revisions[last].RevisionDigest != rev {
		return &VerifyError{"the revision differs from the one the email names, and its history does not link them"}
	}
	return nil
}
