package servertest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/pgtest"
)

// New starts consensusd for t (see Start) and closes it when t ends. Left
// empty in opts: the database is a fresh pgtest clone, the Maildir a
// directory under t.TempDir, and contract violations fail t. t fails when
// the daemon does not start within 30 seconds or stops with an error.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.DatabaseURL == "" {
		opts.DatabaseURL = pgtest.URL(t)
	}
	if opts.Mail == MailMaildir && opts.Maildir == "" {
		opts.Maildir = filepath.Join(t.TempDir(), "mail")
	}
	if opts.Report == nil {
		opts.Report = t
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}
