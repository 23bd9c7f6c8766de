package venue

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// ErrRecordNotReady: the record exists only once the outcome is final.
var ErrRecordNotReady = errors.New("the record exists only once the outcome is final (reached, disagreed, no_consensus or expired)")

// Record returns the agreement's consensus-record/v1 once the outcome is
// final: the stored one, or, the first time, one built from the stored
// room, signed with the service key and stored, so every later read (on
// any replica) serves the same bytes. A deadline that passed while pending
// is settled as expired first, as a room read would. ErrRecordNotReady
// while the outcome is pending.
func (v *Venue) Record(ctx context.Context, p *Principal) (*store.Record, error) {
	now := canon.Now(v.now())
	if p.OutcomeStatus == room.StatusPending && now.Before(p.Deadline) {
		return nil, ErrRecordNotReady // as of the credential lookup: nothing more to read
	}
	return v.issueStoredRecord(ctx, p.AgreementID)
}

// issueStoredRecord returns the agreement's stored record, issuing and
// storing it first if its outcome is final and it has none yet (settling
// a lapsed deadline as expired). ErrRecordNotReady while pending.
func (v *Venue) issueStoredRecord(ctx context.Context, agreementID uuid.UUID) (*store.Record, error) {
	now := canon.Now(v.now())
	rec, err := v.Store.RecordGet(ctx, agreementID)
	if err == nil || !errors.Is(err, room.ErrNotFound) {
		return &rec, err
	}
	a, err := v.Store.AgreementGet(ctx, agreementID)
	if err != nil {
		return nil, err
	}
	if lapsed(a.Outcome.Status, a.Deadline, now) {
		// Pending past the deadline: no event can have decided it (an
		// append would have stored that outcome), so it expired. Read it
		// again: a decision stored meanwhile wins over the expiry.
		if _, err := settleExpiry(ctx, v.Store, a, room.Outcome{Status: room.StatusExpired, DecidedAt: a.Deadline}); err != nil {
			return nil, err
		}
		if a, err = v.Store.AgreementGet(ctx, agreementID); err != nil {
			return nil, err
		}
	}
	if !a.Outcome.Final() {
		return nil, ErrRecordNotReady
	}
	body, err := v.issueRecord(ctx, a, now)
	if err != nil {
		return nil, err
	}
	if err := v.Store.RecordInsert(ctx, store.Record{AgreementID: a.ID, Body: body, SHA256: canon.Digest(body), Kid: v.signingKid(), IssuedAt: now}); err != nil {
		return nil, err
	}
	rec, err = v.Store.RecordGet(ctx, a.ID) // another replica's, if it issued first
	return &rec, err
}

// issueRecord builds and signs the record of the final agreement a, with
// every revision it locked (events name earlier ones after an amendment).
// Once the outcome is final nothing it reads changes any more.
func (v *Venue) issueRecord(ctx context.Context, a store.Agreement, now time.Time) ([]byte, error) {
	if v.Signer == nil {
		return nil, errors.New("venue: record: no signing key configured")
	}
	locked, err := v.Store.RevisionListLocked(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	if len(locked) != a.CurrentRevision {
		return nil, fmt.Errorf("venue: record of %s: %d revisions stored, current is %d", a.ID, len(locked), a.CurrentRevision)
	}
	revs := make([]record.LockedRevision, len(locked))
	for i, rev := range locked { // record.Build refuses any but 1 to n in order
		revs[i] = record.LockedRevision{Number: rev.Number, Canonical: rev.Canonical, Markdown: rev.Markdown,
			RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest, TermsDigest: rev.TermsDigest}
	}
	parts, err := v.Store.ParticipantListByAgreement(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	events, err := v.Store.EventListByAgreement(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	in := record.Input{
		IssuedAt: now, Outcome: a.Outcome, Revisions: revs,
		Slots: make([]record.Slot, len(parts)), Events: make([]record.StoredEvent, len(events)),
	}
	for i, p := range parts {
		in.Slots[i] = record.Slot{ParticipantID: p.ID.String(), InvitationID: p.InvitationID.String(), BindingDigest: p.BindingDigest}
		if p.PublicKey != nil {
			k := jwk.FromPublic(ed25519.PublicKey(p.PublicKey))
			in.Slots[i].PublicKey = &k
		}
	}
	for i, e := range events {
		in.Events[i] = record.StoredEvent{
			ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Revision: e.Revision, Action: e.Action, Body: e.Body,
			CommandDigest: e.CommandDigest, CreatedAt: e.CreatedAt, Prev: e.PrevHash, Hash: e.Hash, Evidence: e.Evidence,
			To: e.ToStrings(), InReplyTo: e.InReplyToString(), IdempotencyKey: e.IdempotencyKey,
		}
		if e.Signature != nil {
			in.Events[i].Signature = jwk.EncodeSignature(e.Signature)
		}
	}
	var artifact []byte
	if a.Outcome.Status == room.StatusReached {
		art, err := v.Store.ArtifactGet(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		in.ArtifactSHA256, artifact = art.SHA256, []byte(art.Body)
	}
	r, err := record.Build(in)
	if err != nil {
		return nil, fmt.Errorf("venue: record of %s: %w", a.ID, err)
	}
	_, body, err := record.Sign(r, v.Signer)
	if err != nil {
		return nil, err
	}
	// Issued once and served for ever: the verifier anyone runs checks it
	// here first, every check, and a record it refuses is never stored.
	keys := &jwk.Set{Keys: []jwk.Published{jwk.Publish(v.Signer.Public().(ed25519.PublicKey))}}
	if rep := record.Verify(body, record.Options{Artifact: artifact, Keys: keys}); !rep.OK() || !rep.Authenticated() {
		return nil, fmt.Errorf("venue: record of %s does not verify: %s", a.ID, strings.Join(rep.FailedChecks(), ", "))
	}
	return body, nil
}
