package agentclient_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

// TestWatchPinsEveryURLOfTheBlock: consensus agent applies the guide's
// first checks to every URL of the invitation block, agent_claim.href
// (which receives the session token and the email proof) and docs among
// them: an email whose claim URL or docs URL is on another origin sends
// nothing, not even the exchange, and the log names the field. The same
// email with every URL pinned is exchanged, so the count can fail.
func TestWatchPinsEveryURLOfTheBlock(t *testing.T) {
	t.Parallel()
	const evil = "http://127.0.0.2:9"

	for _, tc := range []struct {
		name   string
		mutate func(m map[string]any, origin string)
		field  string // "" when the email is sound
	}{
		{"sound", func(map[string]any, string) {}, ""},
		{"claim elsewhere", func(m map[string]any, origin string) {
			c := envelopetest.Sub(m, "agent_claim")
			c["href"] = strings.Replace(c["href"].(string), origin, evil, 1)
		}, "agent_claim.href"},
		{"claim on another path", func(m map[string]any, _ string) {
			c := envelopetest.Sub(m, "agent_claim")
			c["href"] = strings.Replace(c["href"].(string), "/claim", "/exchange", 1)
		}, "agent_claim.href"},
		{"docs elsewhere", func(m map[string]any, _ string) { m["docs"] = evil + "/llms.txt" }, "docs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A server of its own per case: the cases run together.
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				http.NotFound(w, r)
			}))
			t.Cleanup(srv.Close)
			m := envelopetest.Map(srv.URL)
			tc.mutate(m, srv.URL)
			dir := t.TempDir()
			mail := filepath.Join(dir, "mail")
			for _, sub := range []string{"new", "cur", "tmp"} {
				if err := os.MkdirAll(filepath.Join(mail, sub), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			msg := "From: Consensus <consensus@localhost>\r\nTo: buyer@agentmail.to\r\nSubject: Invitation\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
				strings.ReplaceAll(envelopetest.Body(string(envelopetest.JSON(t, m))), "\n", "\r\n")
			if err := os.WriteFile(filepath.Join(mail, "new", "1.eml"), []byte(msg), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			cli.Main([]string{"agent", "watch", "--maildir", mail, "--inbox", "buyer@agentmail.to", "--origin", srv.URL, "--allow-http-loopback", "--state", filepath.Join(dir, "state")},
				cli.Env{Stdout: &out, Stderr: &errb, Context: ctx, Getenv: func(string) string { return "" }})
			sent := requests.Load()
			if tc.field == "" {
				if sent == 0 {
					t.Fatalf("the sound email sent nothing: the count proves nothing\nstderr: %s", errb.String())
				}
				return
			}
			if sent != 0 {
				t.Errorf("an email with %s off the pinned URL sent %d requests", tc.field, sent)
			}
			if log := errb.String() + out.String(); !strings.Contains(log, "check=origin") || !strings.Contains(log, tc.field) {
				t.Errorf("the refusal does not name the origin check and %s:\n%s", tc.field, log)
			}
		})
	}
}
