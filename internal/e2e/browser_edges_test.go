package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// TestPersonPageEdges runs tools/browser/pages.mjs: the invitation page
// with a wrong secret, without its link, with a wrong proof code, from an
// email of revision 1 once revision 3 is current, and after the outcome,
// in Debian's chromium, with no console error on the way.
func TestPersonPageEdges(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	node, tools := browserTools(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	s := startServer(t, servertest.Options{Origin: origin})
	proxyTo(t, ln, s, origin, func(string) {})

	c := s.create("Adopt the glossary", s.future(), participantSpec{"Pia", "human", true})
	person := s.personFromEmail(c.Participants[0].InvitationID) // the email of revision 1
	s.amended(c.AgreementID, map[string]any{"objective": "Adopt the glossary, with the new terms."})
	s.amended(c.AgreementID, map[string]any{"deadline": s.future().Add(time.Hour).Format(time.RFC3339)})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(tools, "pages.mjs"))
	cmd.Dir = tools
	cmd.Stderr = testWriter{t}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"origin": origin, "chromium": browserPath, "outDir": t.ArtifactDir(), "person": person})
	if _, err := stdin.Write(append(cfg, '\n')); err != nil {
		t.Fatal(err)
	}
	var result struct {
		Failures []string `json:"failures"`
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "@@ ")
		if !ok {
			t.Log(sc.Text())
			continue
		}
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err == nil && msg.Result != nil {
			_ = json.Unmarshal(msg.Result, &result)
		}
	}
	if err := cmd.Wait(); err != nil || len(result.Failures) > 0 {
		t.Fatalf("the page's edges: %v; failed checks: %v", err, result.Failures)
	}
}
