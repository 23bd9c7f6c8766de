package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// RevisionListLocked reads every revision of one agreement in full, oldest
// first, and none of another agreement's.
func TestRevisionListLockedReadsEveryRevisionInOrder(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, _ := agreement(t, st)
	other, _ := agreement(t, st)
	now := time.Now().UTC().Truncate(time.Microsecond)
	second := store.Revision{AgreementID: id, Number: 2, Canonical: []byte(`{"title":"T2"}`), Markdown: "# T2\n",
		RevisionDigest: "sha256:r2", MarkdownDigest: "sha256:m2", TermsDigest: strings.Repeat("1", 64), LockedAt: now}
	if err := st.RevisionInsert(ctx, second); err != nil {
		t.Fatal(err)
	}
	revs, err := st.RevisionListLocked(ctx, id)
	if err != nil || len(revs) != 2 {
		t.Fatalf("revisions %+v, %v", revs, err)
	}
	if r := revs[0]; r.Number != 1 || string(r.Canonical) != `{}` || r.Markdown != "# T\n" || r.RevisionDigest != "sha256:r" {
		t.Errorf("first revision %+v", r)
	}
	got := revs[1]
	got.LockedAt = got.LockedAt.UTC()
	if string(got.Canonical) != string(second.Canonical) || got.Number != 2 || got.Markdown != second.Markdown ||
		got.RevisionDigest != second.RevisionDigest || got.MarkdownDigest != second.MarkdownDigest ||
		got.TermsDigest != second.TermsDigest || !got.LockedAt.Equal(now) || got.AgreementID != id {
		t.Errorf("second revision %+v, want %+v", got, second)
	}
	if revs, err := st.RevisionListLocked(ctx, other); err != nil || len(revs) != 1 || revs[0].AgreementID != other {
		t.Errorf("the other agreement's revisions %+v, %v", revs, err)
	}
	if revs, err := st.RevisionListLocked(ctx, uuid.New()); err != nil || len(revs) != 0 {
		t.Errorf("an unknown agreement's revisions %+v, %v", revs, err)
	}
}
