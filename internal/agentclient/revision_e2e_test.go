package agentclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/agentclient"
	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// amend locks the next revision of an agreement through the operator API.
func (f *venueFixture) amend(t *testing.T, agreementID, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.URL+"/api/v1/admin/agreements/"+agreementID+"/revisions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.OperatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("amend %s: %s", body, resp.Status)
	}
}

// TestAcceptAfterARevision: an invitation email names the revision current
// when it was sent; claimed after a later revision, the exchange's history
// links the email's digest to the current revision, which is verified and
// recorded. A history that does not list the email's digest is refused.
func TestAcceptAfterARevision(t *testing.T) {
	t.Parallel()
	f := startVenue(t)
	f.createAgreement(t, "late@agents.test")
	f.waitForMail(t, 1)
	inv, err := ingest.ParseMessageBytes(f.Sink.Messages()[0].Data, envelope.Policy{Origin: f.Origin, AllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	f.amend(t, inv.AgreementID, `{"objective":"Agree to ship version 1.0 on Thursday."}`)
	forged := *inv
	forged.RevisionDigest = strings.Repeat("ab", 32)
	var ve *agentclient.VerifyError
	if _, _, err := newAgent(t, t.TempDir(), agentclient.NewClient()).Accept(context.Background(), &forged); !errors.As(err, &ve) {
		t.Fatalf("an email digest the history does not list was accepted: %v", err)
	}
	rec, fresh, err := newAgent(t, t.TempDir(), agentclient.NewClient()).Accept(context.Background(), inv)
	if err != nil || !fresh || rec.RevisionNumber != 2 || rec.RevisionDigest == inv.RevisionDigest || rec.TermsDigest == "" {
		t.Fatalf("accept after a revision: %+v %v", rec, err)
	}
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestWatchAsksAgainOnlyWhenTheTermsChange: `consensus agent watch --exec`
// verifies each new revision and reports it; a revision that keeps the
// terms (a later deadline) does not run the program again, since its
// agreement still counts; one that changes the objective does, and the
// program's new agree counts on it.
func TestWatchAsksAgainOnlyWhenTheTermsChange(t *testing.T) {
	t.Parallel()
	f := startVenue(t)
	ids := f.createAgreement(t, "alice@agents.test", "bob@agents.test")
	f.waitForMail(t, 2)
	work := t.TempDir()
	runs := filepath.Join(work, "runs")
	script := filepath.Join(work, "decide.sh")
	// It agrees whenever the room says it has no decision that counts.
	if err := os.WriteFile(script, []byte(`#!/bin/sh
echo run >> `+runs+`
if grep -q '"decision":null,"eventsRemaining"'; then echo '{"action":"agree"}'; else echo '{"action":"none"}'; fi
`), 0o755); err != nil {
		t.Fatal(err)
	}
	ranSoFar := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run\n")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"agent", "watch", "--state", filepath.Join(work, "alice"), "--imap", f.IMAPURL("alice@agents.test"),
			"--origin", f.Origin, "--allow-http-loopback", "--exec", script},
			cli.Env{Stdout: &out, Stderr: &errs, Context: ctx, Getenv: func(k string) string {
				if k == "CONSENSUS_IMAP_PASSWORD" {
					return "pw-alice@agents.test"
				}
				return ""
			}})
	}()
	defer func() {
		cancel()
		<-done
	}()

	// Bob is driven by hand, from his own invitation email.
	var bobMsg []byte
	for _, m := range f.Sink.Messages() {
		if bytes.Contains(m.Data, []byte(ids[1])) {
			bobMsg = m.Data
		}
	}
	inv, err := ingest.ParseMessageBytes(bobMsg, envelope.Policy{Origin: f.Origin, AllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	bob := newAgent(t, t.TempDir(), agentclient.NewClient())
	rec, _, err := bob.Accept(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	alice := func() (decision string, revision float64, stale bool) {
		room, _, err := bob.Room(ctx, rec.InvitationID)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Roster []struct {
				DisplayName, Decision string
				Revision              float64
				Stale                 bool
			}
		}
		if err := json.Unmarshal(room.Raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, e := range doc.Roster {
			if e.DisplayName == "Agent A" {
				return e.Decision, e.Revision, e.Stale
			}
		}
		return "", 0, false
	}
	amend := func(body string) { f.amend(t, rec.AgreementID, body) }

	eventually(t, "alice's first agree", func() bool { d, r, _ := alice(); return d == "agree" && r == 1 })
	before := ranSoFar()

	amend(`{"deadline":"` + time.Now().Add(3*time.Hour).UTC().Format(time.RFC3339) + `"}`)
	eventually(t, "watch to report revision 2", func() bool {
		return strings.Contains(out.String(), "revision 2 of "+ids[0]) && strings.Contains(out.String(), "still counts")
	})
	time.Sleep(5 * time.Second) // two more polls of the room
	if n := ranSoFar(); n != before {
		t.Fatalf("the program ran %d more times for a revision that kept the terms", n-before)
	}
	if d, r, stale := alice(); d != "agree" || r != 1 || stale {
		t.Fatalf("alice's agree on revision 1: %s %v stale %v", d, r, stale)
	}

	amend(`{"objective":"Agree to ship version 1.0 on Thursday."}`)
	eventually(t, "watch to report revision 3", func() bool {
		return strings.Contains(out.String(), "revision 3 of "+ids[0]) && strings.Contains(out.String(), "stale")
	})
	eventually(t, "alice's agree on revision 3", func() bool { d, r, stale := alice(); return d == "agree" && r == 3 && !stale })
	if ranSoFar() <= before {
		t.Fatal("the program was not asked again after the terms changed")
	}
	posted, err := bob.Post(ctx, rec.InvitationID, "agree", "", nil)
	if err != nil || posted.Outcome.Status != "reached" || posted.Event.Revision != 3 {
		t.Fatalf("bob's agree: %+v %v", posted, err)
	}
	st, err := agentclient.OpenState(filepath.Join(work, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := st.Load(ids[0]); err != nil || r.RevisionNumber != 3 || r.TermsDigest == "" {
		t.Fatalf("alice's record: %+v %v", r, err)
	}
	if strings.Contains(errs.String(), "csp_") {
		t.Fatal("a token reached the log")
	}
}
