package agentclient_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/servertest"
)

// TestWatchSharedMaildir: make run delivers every participant's mail into
// one Maildir. A watcher told which inbox it serves claims only that
// inbox's invitation and leaves the others' alone; a person's invitation
// stops the watcher serving that person's address before any request,
// saying to hand the email to them.
func TestWatchSharedMaildir(t *testing.T) {
	t.Parallel()
	f := servertest.New(t, servertest.Options{})
	created, err := f.CreateAgreement(context.Background(), servertest.Agreement{
		Title: "Ship the release", Objective: "Agree to ship version 1.0 on Friday.", Deadline: time.Now().Add(time.Hour),
		Participants: []servertest.Participant{
			{DisplayName: "Agent A", Kind: "agent", Email: "a@agents.test", Required: true},
			{DisplayName: "Agent B", Kind: "agent", Email: "b@agents.test", Required: true},
			{DisplayName: "Pat", Kind: "human", Email: "pat@people.test", Required: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := f.WaitForMail(wctx, 3); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	watch := func(d time.Duration, args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var out, errb bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &errb, Context: ctx, Getenv: func(string) string { return "" }}
		code := cli.Main(append([]string{"agent", "watch", "--maildir", f.Maildir, "--local", "--origin", f.Origin}, args...), env)
		return code, out.String(), errb.String()
	}

	stateA := filepath.Join(work, "a")
	code, out, errs := watch(4*time.Second, "--state", stateA, "--inbox", "A@agents.test")
	if code != 0 || !strings.Contains(out, "claimed "+created.Participants[0].InvitationID) {
		t.Fatalf("watcher for a@: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(stateA, "*.json"))
	if len(files) != 1 {
		t.Fatalf("the watcher for a@ holds %d invitations, want only its own: %v\n%s", len(files), files, out)
	}
	// B's invitation is still there for B's watcher.
	stateB := filepath.Join(work, "b")
	if code, out, errs := watch(4*time.Second, "--state", stateB, "--inbox", "b@agents.test"); code != 0 || !strings.Contains(out, "claimed "+created.Participants[1].InvitationID) {
		t.Fatalf("watcher for b@: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	exchanges := func() int { return strings.Count(f.Logs.String(), "/exchange") }
	before := exchanges()
	if before == 0 {
		t.Fatal("the request log shows no exchange: the count below would prove nothing")
	}
	start := time.Now()
	code, out, errs = watch(10*time.Second, "--state", filepath.Join(work, "pat"), "--inbox", "pat@people.test")
	if code == 0 || time.Since(start) > 5*time.Second || !strings.Contains(errs, "is for a person (participant.kind human): hand the email to them") {
		t.Fatalf("watcher on a person's invitation: exit %d after %v\nstdout: %s\nstderr: %s", code, time.Since(start), out, errs)
	}
	if n := exchanges(); n != before {
		t.Fatalf("the watcher sent %d exchange requests for a person's invitation", n-before)
	}
	if ents, _ := os.ReadDir(filepath.Join(work, "pat")); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				names = append(names, e.Name())
			}
		}
		if len(names) > 0 {
			t.Fatalf("the watcher stored %v for a person's invitation", names)
		}
	}
}
