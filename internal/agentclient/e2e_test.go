package agentclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/consensus-md/consensus/internal/agentclient"
	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/servertest"
)

// venueFixture is consensusd running in-process with its mail going to a
// real SMTP server that files each message in the recipient's IMAP INBOX.
type venueFixture struct{ *servertest.Server }

func startVenue(t *testing.T) *venueFixture {
	t.Helper()
	return &venueFixture{servertest.New(t, servertest.Options{Mail: servertest.MailSMTP})}
}

// createAgreement locks an agreement for the given agent inboxes (each gets
// an IMAP mailbox with password "pw-"+address) and returns the invitation
// ids in the same order.
func (f *venueFixture) createAgreement(t *testing.T, inboxes ...string) []string {
	t.Helper()
	var ps []servertest.Participant
	for i, in := range inboxes {
		if err := f.Sink.AddMailbox(in, "pw-"+in); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, servertest.Participant{DisplayName: fmt.Sprintf("Agent %c", 'A'+i), Kind: "agent", Email: in, Required: true})
	}
	created, err := f.CreateAgreement(context.Background(), servertest.Agreement{
		Title: "Ship the release", Objective: "Agree to ship version 1.0 on Friday.",
		Rules: []string{"Comment before deciding."}, Deadline: time.Now().Add(time.Hour), Participants: ps,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range created.Participants {
		ids = append(ids, p.InvitationID)
	}
	return ids
}

// waitForMail waits until n messages reached the SMTP server.
func (f *venueFixture) waitForMail(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitForMail(ctx, n); err != nil {
		t.Fatalf("invitations: %v", err)
	}
}

// execScript writes an --exec program that comments once, then agrees,
// then does nothing. It keeps its memory in dir, keyed by invitation.
func execScript(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "decide.sh")
	script := `#!/bin/sh
cat > /dev/null
f="` + dir + `/exec-$CONSENSUS_INVITATION_ID"
env > "$f.env"
if [ ! -e "$f.commented" ]; then
  touch "$f.commented"
  echo '{"action":"comment","body":"I checked the revision digest; shipping Friday works for me."}'
elif [ ! -e "$f.agreed" ]; then
  touch "$f.agreed"
  echo '{"action":"agree"}'
else
  echo '{"action":"none"}'
fi
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTwoAgentsReachConsensusOverIMAP runs the whole flow through the CLI:
// two `consensus agent watch --exec` runtimes read their own IMAP inboxes,
// exchange, verify, claim, comment and agree; then both download and
// verify the artifact.
func TestTwoAgentsReachConsensusOverIMAP(t *testing.T) {
	t.Parallel()
	f := startVenue(t)
	inboxes := []string{"alice@agents.test", "bob@agents.test"}
	ids := f.createAgreement(t, inboxes...)
	f.waitForMail(t, 2)
	work := t.TempDir()
	script := execScript(t, work)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	errs := make([]bytes.Buffer, 2)
	codes := make([]int, 2)
	for i, inbox := range inboxes {
		env := cli.Env{Stdout: &outs[i], Stderr: &errs[i], Context: ctx, Getenv: func(k string) string {
			if k == "CONSENSUS_IMAP_PASSWORD" {
				return "pw-" + inbox
			}
			return ""
		}}
		args := []string{"agent", "watch", "--state", filepath.Join(work, "state-"+inbox), "--imap", f.IMAPURL(inbox),
			"--origin", f.Origin, "--allow-http-loopback", "--exec", script, "--until-final"}
		wg.Go(func() { codes[i] = cli.Main(args, env) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("watch did not finish:\nA: %s\nB: %s", errs[0].String(), errs[1].String())
	}
	for i, inbox := range inboxes {
		if codes[i] != 0 || !strings.Contains(outs[i].String(), "claimed "+ids[i]) {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", inbox, codes[i], outs[i].String(), errs[i].String())
		}
		state := filepath.Join(work, "state-"+inbox)
		run := func(args ...string) string {
			var out, errb bytes.Buffer
			if code := cli.Main(append([]string{"agent"}, append(args, "--state", state)...), cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}); code != 0 {
				t.Fatalf("%s %v: exit %d: %s", inbox, args, code, errb.String())
			}
			return out.String()
		}
		var room struct {
			Outcome struct{ Status string }
			Events  []struct{ Action, ParticipantID string }
		}
		if err := json.Unmarshal([]byte(run("room", ids[i])), &room); err != nil {
			t.Fatal(err)
		}
		if room.Outcome.Status != "reached" || len(room.Events) != 4 {
			t.Fatalf("%s: room %+v", inbox, room)
		}
		art := filepath.Join(work, inbox+"-CONSENSUS.md")
		out := run("artifact", ids[i], "--file", art)
		if !strings.Contains(out, "verified") {
			t.Fatalf("artifact: %s", out)
		}
		body, err := os.ReadFile(art)
		if err != nil || !bytes.Contains(body, []byte("Ship the release")) {
			t.Fatalf("artifact file: %v", err)
		}
		// The outcome email (SPEC §23) may have come since; the invitation
		// was read.
		if n := unseen(t, f.Sink.IMAPAddr, inbox); n != 0 {
			t.Fatalf("%s: %d messages other than the outcome email still unseen after the claim", inbox, n)
		}
		// The invite secret, proof and tokens never reached the program or a log.
		env, err := os.ReadFile(filepath.Join(work, "exec-"+ids[i]+".env"))
		if err != nil {
			t.Fatal(err)
		}
		rec := mustRecord(t, state, ids[i])
		for _, leak := range []string{rec.ParticipantToken, "pw-" + inbox, "csp_", "css_", "csi_"} {
			if strings.Contains(string(env), leak) || strings.Contains(errs[i].String(), leak) || strings.Contains(outs[i].String(), leak) {
				t.Errorf("%s: a credential (%.4s…) leaked to the --exec environment or the output", inbox, leak)
			}
		}
	}
}

// unseen counts the unseen messages of inbox but its outcome email.
func unseen(t *testing.T, addr, inbox string) int {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(inbox, "pw-"+inbox).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen},
		Not: []imap.SearchCriteria{{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: ": outcome "}}}}}, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	return len(data.AllUIDs())
}

func mustRecord(t *testing.T, dir, id string) *agentclient.Record {
	t.Helper()
	st, err := agentclient.OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, id+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v, %v", fi.Mode(), err)
	}
	return r
}
