package agentclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/agentclient"
	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
)

// claimOne creates a one-agent agreement, takes the delivered invitation
// straight from the SMTP server and claims it into a fresh state directory.
func claimOne(t *testing.T, f *venueFixture) (*agentclient.Agent, *agentclient.Record, string) {
	t.Helper()
	f.createAgreement(t, "solo@agents.test")
	f.waitForMail(t, 1)
	inv, err := ingest.ParseMessageBytes(f.Sink.Messages()[0].Data, envelope.Policy{Origin: f.Origin, AllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := newAgent(t, dir, agentclient.NewClient())
	rec, fresh, err := a.Accept(context.Background(), inv)
	if err != nil || !fresh {
		t.Fatalf("accept: fresh %v, %v", fresh, err)
	}
	// Accepting again is a no-op: each invitation is processed once.
	if _, again, err := a.Accept(context.Background(), inv); err != nil || again {
		t.Fatalf("second accept: fresh %v, %v", again, err)
	}
	return a, rec, dir
}

func newAgent(t *testing.T, dir string, c *agentclient.Client) *agentclient.Agent {
	t.Helper()
	st, err := agentclient.OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &agentclient.Agent{State: st, Client: c, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// lossyTransport delivers every POST to the server and then pretends the
// connection died before the answer arrived.
type lossyTransport struct{}

func (lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost {
		return resp, err
	}
	resp.Body.Close()
	return nil, errors.New("connection reset (simulated crash after sending)")
}

func roomEvents(t *testing.T, a *agentclient.Agent, id string) []string {
	t.Helper()
	room, _, err := a.Room(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Events []struct{ ID string } }
	if err := json.Unmarshal(room.Raw, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range doc.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestIdempotencyKeyPersistedBeforeSending(t *testing.T) {
	t.Parallel()
	f := startVenue(t)
	_, rec, dir := claimOne(t, f)
	ctx := context.Background()

	// The server stores the comment but the answer is lost.
	lossy := agentclient.NewClient()
	lossy.HTTP.Transport = lossyTransport{}
	if _, err := newAgent(t, dir, lossy).Post(ctx, rec.InvitationID, "comment", "first thoughts", nil); err == nil {
		t.Fatal("post over a lossy connection reported success")
	}
	a := newAgent(t, dir, agentclient.NewClient()) // the next run
	stored := roomEvents(t, a, rec.InvitationID)
	if len(stored) != 1 {
		t.Fatalf("%d events stored, want 1", len(stored))
	}
	p, err := a.Resume(ctx, rec.InvitationID)
	if err != nil || p == nil || !p.Replayed || p.Event.ID != stored[0] {
		t.Fatalf("replay: %+v, %v; want 200 with event %s", p, err, stored[0])
	}
	if p, err := a.Resume(ctx, rec.InvitationID); err != nil || p != nil {
		t.Fatalf("nothing should be pending: %+v, %v", p, err)
	}

	// A crash between persisting and sending: the next run sends it once.
	room, _, err := a.Room(ctx, rec.InvitationID)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.State.SavePending(rec.InvitationID, &agentclient.Pending{Key: "cak-crash-before-send",
		Command: agentclient.Command{Action: "question", Body: "Friday which timezone?", Revision: room.Revision.Number, Digest: room.Revision.RevisionDigest}}); err != nil {
		t.Fatal(err)
	}
	p, err = newAgent(t, dir, agentclient.NewClient()).Post(ctx, rec.InvitationID, "comment", "UTC is fine", nil)
	if err != nil || p.Replayed {
		t.Fatalf("post: %+v, %v", p, err)
	}
	if got := roomEvents(t, a, rec.InvitationID); len(got) != 3 {
		t.Fatalf("%d events, want 3 (lost-answer comment once, pending question, new comment)", len(got))
	}
}

func TestConfirmationPrompt(t *testing.T) {
	t.Parallel()
	f := startVenue(t)
	_, rec, dir := claimOne(t, f)
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cli.Main(append([]string{"agent"}, append(args, "--state", dir)...),
			cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Getenv: func(string) string { return "" }})
		return code, out.String(), errb.String()
	}
	code, _, stderr := run("no\n", "agree", rec.InvitationID)
	if code != 1 || !strings.Contains(stderr, "Type yes to agree") || !strings.Contains(stderr, rec.RevisionDigest) {
		t.Fatalf("declined: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := run("", "agree", rec.InvitationID); code != 1 {
		t.Fatalf("no answer (EOF) must not agree: exit %d", code)
	}
	a := newAgent(t, dir, agentclient.NewClient())
	if n := len(roomEvents(t, a, rec.InvitationID)); n != 0 {
		t.Fatalf("%d events after declining", n)
	}
	code, stdout, stderr := run("yes\n", "agree", rec.InvitationID)
	if code != 0 || !strings.Contains(stdout, "recorded agree") || !strings.Contains(stdout, "outcome reached") {
		t.Fatalf("confirmed: exit %d, %q %q", code, stdout, stderr)
	}
	// --yes skips the prompt (the room is now closed, so the server refuses).
	code, _, stderr = run("", "disagree", rec.InvitationID, "--yes")
	if code != 1 || strings.Contains(stderr, "Type yes") || !strings.Contains(stderr, "409") {
		t.Fatalf("--yes: exit %d, %q", code, stderr)
	}
}

// artifactServer answers the artifact route with body and the given headers.
func artifactServer(t *testing.T, body []byte, contentDigest, sha string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Consensus-Participant csp_test" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Content-Digest", contentDigest)
		w.Header().Set("X-Consensus-SHA256", sha)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestArtifactRefusesTamperedBytes(t *testing.T) {
	t.Parallel()
	good := []byte("# CONSENSUS.md\n\nReached.\n")
	tampered := []byte("# CONSENSUS.md\n\nReached, and also pay me.\n")
	goodCD := "sha-256=:" + canon.DigestBase64(good) + ":"
	for _, tc := range []struct {
		name     string
		body     []byte
		cd, sha  string
		wantFile bool
	}{
		{"matching", good, goodCD, canon.Digest(good), true},
		{"body changed", tampered, goodCD, canon.Digest(good), false},
		{"wrong Content-Digest", good, "sha-256=:" + canon.DigestBase64(tampered) + ":", canon.Digest(good), false},
		{"wrong X-Consensus-SHA256", good, goodCD, canon.Digest(tampered), false},
		{"no Content-Digest", good, "", canon.Digest(good), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := artifactServer(t, tc.body, tc.cd, tc.sha)
			dir := t.TempDir()
			st, err := agentclient.OpenState(filepath.Join(dir, "state"))
			if err != nil {
				t.Fatal(err)
			}
			id := "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
			if err := st.Save(&agentclient.Record{InvitationID: id, ParticipantToken: "csp_test", Actions: agentroute.URLs{Artifact: base + "/artifact"}}); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "CONSENSUS.md")
			var stdout, stderr bytes.Buffer
			code := cli.Main([]string{"agent", "artifact", id, "--file", out, "--state", filepath.Join(dir, "state")},
				cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
			_, statErr := os.Stat(out)
			if tc.wantFile {
				if code != 0 || statErr != nil || !strings.Contains(stdout.String(), canon.Digest(good)) {
					t.Fatalf("exit %d, %v, %q %q", code, statErr, stdout.String(), stderr.String())
				}
				return
			}
			if code == 0 || statErr == nil || !strings.Contains(stderr.String(), "do not match") {
				t.Fatalf("tampered artifact accepted: exit %d, file %v, %q", code, statErr, stderr.String())
			}
		})
	}
}

func TestExecHook(t *testing.T) {
	// Not parallel: it sets an environment variable the child must not see.
	t.Setenv("CONSENSUS_IMAP_PASSWORD", "imap-password-must-not-leak")
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := &agentclient.Record{InvitationID: "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", AgreementID: "0190a6b2-0000-7e4f-8a9b-0c1d2e3f4a5b", ParticipantToken: "csp_secret"}
	room := []byte(`{"outcome":{"status":"pending"},"you":{"decision":null}}`)
	ok := script("ok.sh", `cat > "`+dir+`/stdin"; env > "`+dir+`/env"; echo "args:$#" > "`+dir+`/args"
echo '{"action":"change-request","body":"Make it Monday."}'
`)
	cmd, err := agentclient.RunExec(context.Background(), ok, room, rec, nil)
	if err != nil || cmd.Action != "change_request" || cmd.Body != "Make it Monday." {
		t.Fatalf("%+v, %v", cmd, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "stdin")); !bytes.Equal(b, room) {
		t.Fatalf("stdin %q", b)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	if bytes.Contains(env, []byte("imap-password-must-not-leak")) || bytes.Contains(env, []byte("csp_secret")) ||
		!bytes.Contains(env, []byte("CONSENSUS_INVITATION_ID="+rec.InvitationID)) {
		t.Fatalf("child environment:\n%s", env)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "args")); string(b) != "args:0\n" {
		t.Fatalf("child argv: %q", b)
	}
	for name, body := range map[string]string{
		"garbage.sh":   "echo not json\n",
		"unknown.sh":   `echo '{"action":"execute","body":"rm -rf"}'` + "\n",
		"agreebody.sh": `echo '{"action":"agree","body":"yes!"}'` + "\n",
		"nobody.sh":    `echo '{"action":"comment"}'` + "\n",
		"extra.sh":     `echo '{"action":"none","token":"x"}'` + "\n",
		"fails.sh":     "exit 3\n",
	} {
		if cmd, err := agentclient.RunExec(context.Background(), script(name, body), room, rec, nil); err == nil {
			t.Errorf("%s: accepted %+v", name, cmd)
		}
	}
	if cmd, err := agentclient.RunExec(context.Background(), script("none.sh", `echo '{"action":"none"}'`+"\n"), room, rec, nil); err != nil || cmd.Action != "none" {
		t.Fatalf("none: %+v, %v", cmd, err)
	}
}
