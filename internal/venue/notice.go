package venue

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// queueNotice queues, in tx, the short email that tells existing
// participant p that revision locked was locked and what changed. It
// carries the new digests and no credential; it is sealed like every
// outbox body.
func (v *Venue) queueNotice(ctx context.Context, tx *store.Tx, p store.Participant, locked room.Locked, c room.Change, now time.Time) error {
	r := locked.Revision
	in := mail.RevisionNoticeInput{
		Origin: v.Origin, Title: r.Title, Kind: p.Kind, RoomURL: agentroute.For(v.Origin, p.InvitationID.String()).Room,
		AgreementID: r.AgreementID, InvitationID: p.InvitationID.String(), RevisionNumber: r.Revision,
		RevisionDigest: locked.RevisionDigest, TermsDigest: locked.TermsDigest, Deadline: r.Deadline,
		TitleChanged: c.Title, ObjectiveChanged: c.Objective, RulesChanged: c.Rules, TermsChanged: c.Terms,
	}
	if c.Deadline {
		in.PreviousDeadline = c.PreviousDeadline
	}
	if c.Rule {
		in.DecisionRule = r.DecisionRule.Words(room.RequiredCount(r))
	}
	for _, a := range c.Added {
		in.Added = append(in.Added, a.DisplayName)
	}
	id := uuid.New()
	return tx.OutboxInsert(ctx, store.OutboxMessage{
		ID: id, InvitationID: p.InvitationID, AgreementID: p.AgreementID, Recipient: p.Email,
		Subject: mail.RevisionNoticeSubject(r.Revision, r.Title), MessageID: id.String() + "@" + originHost(v.Origin),
		SealedBody: v.Keys.Seal([]byte(mail.RevisionNoticeBody(in)), id[:]), CreatedAt: now, Kind: store.OutboxRevision,
	})
}
