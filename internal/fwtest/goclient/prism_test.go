package goclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// lockedBuffer collects a child process's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// violations fails t for every answer Prism marks with sl-violations, the
// header it adds when a request or response breaks the document.
type violations struct {
	t    *testing.T
	base http.RoundTripper
}

func (v violations) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := v.base.RoundTrip(r)
	if err == nil && resp.Header.Get("sl-violations") != "" {
		v.t.Errorf("prism: %s %s -> %d violates openapi.json: %s", r.Method, r.URL.Path, resp.StatusCode, resp.Header.Get("sl-violations"))
	}
	return resp, err
}

// startPrism runs Stoplight Prism's validating proxy in front of s, with
// the openapi.json s serves, and returns its URL and its log.
func startPrism(t *testing.T, bin string, s *servertest.Server) (string, *lockedBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "prism"), "proxy", s.URL+"/openapi.json", s.URL,
		"--errors", "--host", "127.0.0.1", "--port", port)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(logs.String(), "Prism is listening") {
		if time.Now().After(deadline) {
			t.Fatalf("prism did not start:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "http://127.0.0.1:" + port, logs
}

// TestPrismProxyFlow sends the whole flow, the operator's creation
// included, through Prism's validating proxy (--errors: a request or
// response that breaks openapi.json becomes an error answer) and requires
// zero violations and no unsupported security scheme in its log.
func TestPrismProxyFlow(t *testing.T) {
	t.Parallel()
	bin := fwtest.NodeTools(t)
	s := servertest.New(t, servertest.Options{})
	prism, logs := startPrism(t, bin, s)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: violations{t: t, base: http.DefaultTransport}}

	for _, path := range []string{"/.well-known/consensus-agent", "/api/health", "/openapi-agent.json"} {
		resp, err := hc.Get(prism + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s through prism: HTTP %d\n%s", path, resp.StatusCode, logs.String())
		}
	}
	agreement, _ := json.Marshal(map[string]any{
		"title": "Through Prism", "objective": "Agree on the release window for version 2.", "rules": []string{"Weekdays only"},
		"deadline":     s.Clock.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339),
		"participants": []map[string]any{{"displayName": "Builder agent", "kind": "agent", "email": "builder@agentmail.to", "required": true}},
	})
	req, _ := http.NewRequest(http.MethodPost, prism+"/api/v1/admin/agreements", bytes.NewReader(agreement))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.OperatorToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Participants []struct {
			InvitationID string `json:"invitationId"`
		} `json:"participants"`
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || len(created.Participants) != 1 {
		t.Fatalf("create through prism: HTTP %d %v\n%s", resp.StatusCode, err, logs.String())
	}

	goFlow(t, prism, hc, fwtest.ReadInvite(t, s, created.Participants[0].InvitationID))

	log := logs.String()
	if testing.Verbose() {
		t.Log(log)
	}
	if n := strings.Count(log, "Request received"); n < 12 {
		t.Errorf("prism saw %d requests, want the whole flow:\n%s", n, log)
	}
	for _, bad := range []string{"Violation", "violation", "not support", "✖"} {
		if strings.Contains(log, bad) {
			t.Errorf("prism reported %q:\n%s", bad, log)
		}
	}
}
