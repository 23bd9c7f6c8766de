// Command consensus-demo shows email both ways in one run (`make demo`): it
// starts consensusd in-process (internal/servertest) on a fresh database of
// the PostgreSQL on this machine named by DATABASE_URL, with an in-process
// mail system (SMTP into IMAP mailboxes), locks an agreement for two agents
// through the operator API, then runs two
// `consensus agent watch` processes that read their IMAP inboxes, verify,
// claim, comment and agree, and finally downloads both artifacts with
// `consensus agent artifact`, which verifies them, and prints their SHA-256.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

func main() {
	bin := flag.String("consensus", "bin/consensus", "the consensus CLI binary")
	flag.Parse()
	if err := run(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "consensus-demo:", err)
		os.Exit(1)
	}
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const decide = `#!/bin/sh
# The demo's decision program: comment once, then agree, then stay quiet.
cat > /dev/null
f="%s/exec-$CONSENSUS_INVITATION_ID"
if [ ! -e "$f.commented" ]; then
  touch "$f.commented"
  echo '{"action":"comment","body":"I recomputed the revision digest and read the rules. Shipping on Friday works for me."}'
elif [ ! -e "$f.agreed" ]; then
  touch "$f.agreed"
  echo '{"action":"agree"}'
else
  echo '{"action":"none"}'
fi
`

func run(bin string) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	cli, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		return fmt.Errorf("DATABASE_URL: required (make demo starts a private PostgreSQL under .data/pg)")
	}
	dbURL, drop, err := pgtest.Create(ctx, base)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer drop()

	// The harness the end-to-end tests use: consensusd on 127.0.0.1:0,
	// mail over SMTP into in-process IMAP mailboxes, and a client that
	// checks every exchange against openapi.json (Close reports a breach).
	srv, err := servertest.Start(ctx, servertest.Options{DatabaseURL: dbURL, Mail: servertest.MailSMTP, Localhost: true})
	if err != nil {
		return err
	}
	defer srv.Close()
	agents := []string{"alice@agents.localhost", "bob@agents.localhost"}
	passwords := map[string]string{}
	for _, a := range agents {
		passwords[a] = random(12)
		if err := srv.Sink.AddMailbox(a, passwords[a]); err != nil {
			return err
		}
	}
	fmt.Printf("consensusd     %s (in-process, fresh database)\nmail           SMTP %s -> IMAP %s (in-process)\n", srv.Origin, srv.Sink.SMTPAddr, srv.Sink.IMAPAddr)

	ids, err := createAgreement(ctx, srv, agents)
	if err != nil {
		return err
	}
	fmt.Printf("agreement      locked for %s and %s; invitations queued\n", agents[0], agents[1])
	if err := srv.WaitForMail(ctx, len(agents)); err != nil {
		return fmt.Errorf("invitations were not delivered: %w", err)
	}
	fmt.Println("mail           both invitations delivered over SMTP into the agents' IMAP inboxes")

	work, err := os.MkdirTemp("", "consensus-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	script := filepath.Join(work, "decide.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, decide, work), 0o755); err != nil {
		return err
	}
	cmds := make([]*exec.Cmd, len(agents))
	for i, a := range agents {
		imapURL := srv.IMAPURL(a)
		c := exec.CommandContext(ctx, cli, "agent", "watch", "--state", filepath.Join(work, a), "--imap", imapURL,
			"--origin", srv.Origin, "--allow-http-loopback", "--exec", script, "--until-final")
		c.Env = append(os.Environ(), "CONSENSUS_IMAP_PASSWORD="+passwords[a])
		c.Stdout = prefixed(a+" | ", os.Stdout)
		c.Stderr = prefixed(a+" | ", os.Stderr)
		fmt.Printf("agent          consensus agent watch --imap %s --exec decide.sh --until-final\n", imapURL)
		if err := c.Start(); err != nil {
			return err
		}
		cmds[i] = c
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			return fmt.Errorf("%s: consensus agent watch: %w", agents[i], err)
		}
	}
	sums := map[string]bool{}
	for i, a := range agents {
		out := filepath.Join(work, strings.Split(a, "@")[0]+"-CONSENSUS.md")
		var buf bytes.Buffer
		c := exec.CommandContext(ctx, cli, "agent", "artifact", ids[i], "--file", out, "--state", filepath.Join(work, a))
		c.Stdout, c.Stderr = &buf, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%s: consensus agent artifact: %w", a, err)
		}
		fields := strings.Fields(buf.String())
		sum := ""
		for j, f := range fields {
			if f == "sha256" && j+1 < len(fields) {
				sum = fields[j+1]
			}
		}
		sums[sum] = true
		fmt.Printf("artifact       %-24s verified  sha256 %s\n", a, sum)
	}
	if len(sums) != 1 {
		return fmt.Errorf("the two agents downloaded different artifacts")
	}
	if err := srv.Close(); err != nil {
		return err
	}
	fmt.Printf("done           outcome reached; both agents hold the same verified CONSENSUS.md (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

// createAgreement locks the demo's agreement for agents through the
// operator API and returns their invitation ids in order.
func createAgreement(ctx context.Context, srv *servertest.Server, agents []string) ([]string, error) {
	var ps []servertest.Participant
	for i, a := range agents {
		ps = append(ps, servertest.Participant{DisplayName: []string{"Alice (agent)", "Bob (agent)"}[i%2], Kind: "agent", Email: a, Required: true})
	}
	created, err := srv.CreateAgreement(ctx, servertest.Agreement{
		Title: "Ship version 1.0", Objective: "Agree to ship version 1.0 on Friday.",
		Rules:    []string{"Read the revision before deciding.", "Comment before the final decision."},
		Deadline: time.Now().Add(time.Hour), Participants: ps,
	})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range created.Participants {
		ids = append(ids, p.InvitationID)
	}
	return ids, nil
}

// prefixed writes each line of output with a prefix.
func prefixed(prefix string, w io.Writer) io.Writer {
	pr, pw := io.Pipe()
	go func() {
		buf := make([]byte, 0, 4096)
		tmp := make([]byte, 4096)
		for {
			n, err := pr.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				fmt.Fprintf(w, "%s%s\n", prefix, buf[:i])
				buf = buf[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	return pw
}
