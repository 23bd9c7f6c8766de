package servertest_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

func get(t *testing.T, s *servertest.Server, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.OperatorToken)
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestStartNeedsNoTest: Start and Close work without a testing.TB (as the
// demo uses them), serve on loopback and clean up the Maildir they made.
func TestStartNeedsNoTest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := servertest.Start(ctx, servertest.Options{}); err == nil {
		t.Fatal("Start without a database succeeded")
	}
	s, err := servertest.Start(ctx, servertest.Options{DatabaseURL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || s.Origin != s.URL || s.Sink != nil {
		t.Fatalf("URL %q, origin %q, sink %v", s.URL, s.Origin, s.Sink)
	}
	if r := get(t, s, "/api/health"); r.StatusCode != http.StatusOK {
		t.Fatalf("health: %d", r.StatusCode)
	}
	if _, err := os.Stat(s.Maildir); err != nil {
		t.Fatalf("maildir: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Maildir); !os.IsNotExist(err) {
		t.Fatalf("the fresh Maildir outlived Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseReturnsViolations: without Options.Report, what the contract
// transport finds comes back from Close, so a program cannot miss it.
func TestCloseReturnsViolations(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := servertest.Start(ctx, servertest.Options{DatabaseURL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A deadline in the past and no participants: the request breaks the
	// contract, and the server refuses it.
	if _, err := s.CreateAgreement(ctx, servertest.Agreement{Title: "T", Objective: "O"}); err == nil {
		t.Fatal("an agreement without participants was created")
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "request violates openapi.json") {
		t.Fatalf("Close: %v", err)
	}
}

// TestSMTPSinkAndReplica: mail goes over SMTP into IMAP mailboxes, and a
// replica shares the database, operator token, keys and sink.
func TestSMTPSinkAndReplica(t *testing.T) {
	t.Parallel()
	one := servertest.New(t, servertest.Options{Mail: servertest.MailSMTP})
	if err := one.Sink.AddMailbox("a@agents.test", "pw"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := one.CreateAgreement(ctx, servertest.Agreement{
		Title: "Harness", Objective: "Check the harness.", Deadline: one.Clock.Now().Add(time.Hour),
		Participants: []servertest.Participant{{DisplayName: "A", Kind: "agent", Email: "a@agents.test", Required: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := one.WaitForMail(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if u := one.IMAPURL("a@agents.test"); u != "imap+plain://a%40agents.test@"+one.Sink.IMAPAddr+"/INBOX" {
		t.Fatalf("IMAP URL %q", u)
	}
	two := servertest.New(t, one.ReplicaOptions())
	if two.URL == one.URL || two.Origin != one.Origin || two.Sink != one.Sink || two.OperatorToken != one.OperatorToken {
		t.Fatalf("replica at %s (origin %s, sink %p) of %s (origin %s, sink %p), same operator token: %v",
			two.URL, two.Origin, two.Sink, one.URL, one.Origin, one.Sink, two.OperatorToken == one.OperatorToken)
	}
	if r := get(t, two, "/api/v1/admin/agreements/"+c.AgreementID); r.StatusCode != http.StatusOK {
		t.Fatalf("the replica does not see the agreement: %d", r.StatusCode)
	}
}
