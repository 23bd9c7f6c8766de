package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// Agreement stores, in the default workspace, an agreement with revision 1
// and one required agent participant whose invitation is unclaimed, and
// returns the agreement's and the participant's ids. Tests of the store and
// of what sits on it start from this row set.
func Agreement(t testing.TB, st *store.Store) (uuid.UUID, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	id, pid := uuid.New(), uuid.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := st.InWorkspace(ctx, workspace.DefaultID, func(tx *store.Tx) error {
		if err := tx.AgreementInsert(ctx, id, now.Add(time.Hour), now); err != nil {
			return err
		}
		if err := tx.RevisionInsert(ctx, store.Revision{AgreementID: id, Number: 1, Canonical: []byte(`{}`), Markdown: "# T\n",
			RevisionDigest: "sha256:r", MarkdownDigest: "sha256:m", TermsDigest: strings.Repeat("0", 64), LockedAt: now}); err != nil {
			return err
		}
		iid := uuid.New()
		if err := tx.ParticipantInsert(ctx, store.Participant{ID: pid, AgreementID: id, InvitationID: iid, DisplayName: "A", Kind: room.KindAgent,
			Email: "a@example.test", Required: true}); err != nil {
			return err
		}
		return tx.InvitationInsert(ctx, store.Invitation{ID: iid, ParticipantID: pid, AgreementID: id, SecretHash: []byte{1}, ProofHash: []byte{2},
			ExpiresAt: now.Add(time.Hour), IssuedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id, pid
}
