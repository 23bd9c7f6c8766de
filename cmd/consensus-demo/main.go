// Command consensus-demo shows email both ways in one run (`make demo`): it
// starts consensusd in-process on a fresh database of the PostgreSQL named by
// DATABASE_URL, an in-process mail system (SMTP into IMAP mailboxes), locks
// an agreement for two agents through the operator API, then runs two
// `consensus agent watch` processes that read their IMAP inboxes, verify,
// claim, comment and agree, and finally downloads both artifacts with
// `consensus agent artifact`, which verifies them, and prints their SHA-256.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/daemon"
	"github.com/consensus-md/consensus/internal/mailsink"
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

// freshDatabase creates consensus_demo_<random> next to the database of base.
func freshDatabase(ctx context.Context, base string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	name := "consensus_demo_" + random(4)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		_, _ = conn.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		conn.Close(context.Background())
	}
	return u.String(), drop, nil
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
	dbURL, drop, err := freshDatabase(ctx, base)
	if err != nil {
		return err
	}
	defer drop()

	mail, err := mailsink.Start()
	if err != nil {
		return err
	}
	defer mail.Close()
	agents := []string{"alice@agents.localhost", "bob@agents.localhost"}
	passwords := map[string]string{}
	for _, a := range agents {
		passwords[a] = random(12)
		if err := mail.AddMailbox(a, passwords[a]); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	origin := "http://" + ln.Addr().String()
	operator := "cso_" + random(32)
	settings := map[string]string{
		"CONSENSUS_ENV": "local", "DATABASE_URL": dbURL, "CONSENSUS_PUBLIC_ORIGIN": origin,
		"CONSENSUS_LISTEN": ln.Addr().String(), "CONSENSUS_TOKEN_KEY": random(32), "CONSENSUS_OPERATOR_TOKEN": operator,
		"CONSENSUS_MAIL_URL": mail.SMTPURL(), "CONSENSUS_OUTBOX_POLL": "50ms",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	if err != nil {
		return err
	}
	dctx, stopDaemon := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(dctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), daemon.Options{Listener: ln, Ready: ready})
	}()
	defer func() { stopDaemon(); <-done }()
	select {
	case <-ready:
	case err := <-done:
		return err
	}
	fmt.Printf("consensusd     %s (in-process, fresh database)\nmail           SMTP %s -> IMAP %s (in-process)\n", origin, mail.SMTPAddr, mail.IMAPAddr)

	ids, err := createAgreement(origin, operator, agents)
	if err != nil {
		return err
	}
	fmt.Printf("agreement      locked for %s and %s; invitations queued\n", agents[0], agents[1])
	for len(mail.Messages()) < len(agents) {
		if ctx.Err() != nil {
			return fmt.Errorf("invitations were not delivered")
		}
		time.Sleep(20 * time.Millisecond)
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
		imapURL := "imap+plain://" + url.PathEscape(a) + "@" + mail.IMAPAddr + "/INBOX"
		c := exec.CommandContext(ctx, cli, "agent", "watch", "--state", filepath.Join(work, a), "--imap", imapURL,
			"--origin", origin, "--allow-http-loopback", "--exec", script, "--until-final")
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
		c := exec.CommandContext(ctx, cli, "agent", "artifact", ids[i], "-o", out, "--state", filepath.Join(work, a))
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
	fmt.Printf("done           outcome reached; both agents hold the same verified CONSENSUS.md (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

func createAgreement(origin, operator string, agents []string) ([]string, error) {
	var ps []map[string]any
	for i, a := range agents {
		ps = append(ps, map[string]any{"displayName": []string{"Alice (agent)", "Bob (agent)"}[i%2], "kind": "agent", "email": a, "required": true})
	}
	body, _ := json.Marshal(map[string]any{
		"title": "Ship version 1.0", "objective": "Agree to ship version 1.0 on Friday.",
		"rules":    []string{"Read the revision before deciding.", "Comment before the final decision."},
		"deadline": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "participants": ps,
	})
	req, _ := http.NewRequest(http.MethodPost, origin+"/api/v1/admin/agreements", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+operator)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var created struct {
		Participants []struct{ InvitationID string }
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("create agreement: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil {
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
