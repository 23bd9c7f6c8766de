package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds the browser make test installs (Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: make test installs Debian's chromium package when run as root; otherwise install it (apt-get install chromium)")
	return ""
}

// TestInvitePageInBrowser opens a human invitation's invite_uri, fragment
// and all, in headless Chromium: the page renders with its style allowed by
// the Content-Security-Policy, runs no script, shows no console error, and
// the secret in the fragment never reaches the server.
func TestInvitePageInBrowser(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Browser check", s.future(), participantSpec{"Agent", "agent", true}, participantSpec{"Person", "human", false})
	inv := s.invitation(c.Participants[1].InvitationID)
	if inv.Envelope.Participant.Kind != "human" || !strings.Contains(inv.Envelope.InviteURI, "#secret=") {
		t.Fatalf("human envelope %v", inv.Envelope.InviteURI)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	consoleCtx, stopConsole := context.WithCancel(ctx)
	defer stopConsole()
	messages := chromedp.Console(consoleCtx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()

	pageURL := strings.Replace(inv.Envelope.InviteURI, s.Origin, s.URL, 1)
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitVisible("h1")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	title := run(t, ctx, chromedp.Title())
	heading := run(t, ctx, chromedp.Text("h1"))
	font := run(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).fontFamily`))
	scripts := run(t, ctx, chromedp.Evaluate[int](`document.scripts.length`))
	shot := run(t, ctx, chromedp.FullScreenshot(100))
	time.Sleep(200 * time.Millisecond) // let late console messages arrive
	if title != "Consensus invitation" || !strings.Contains(heading, "Consensus invitation") {
		t.Errorf("title %q, heading %q", title, heading)
	}
	if !strings.Contains(font, "system-ui") {
		t.Errorf("the page style was not applied (CSP blocked it?): font-family %q", font)
	}
	if scripts != 0 {
		t.Errorf("the page has %d scripts", scripts)
	}
	mu.Lock()
	if len(problems) > 0 {
		t.Errorf("browser reported: %v", problems)
	}
	mu.Unlock()
	if strings.Contains(s.Logs.String(), inv.Secret) || strings.Contains(s.Logs.String(), strings.TrimPrefix(inv.Secret, "csi_")) {
		t.Error("the fragment secret reached the server")
	}
	if dir := os.Getenv("CONSENSUS_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "invite-page.png"), shot, 0o644)
	}
	if len(shot) < 1000 {
		t.Errorf("screenshot of %d bytes", len(shot))
	}
}

// run performs one browser action and fails the test on error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return v
}
