package httpapi_test

import (
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/servertest"
)

// TestPagesHeaders: every page and asset carries the strict policy and the
// headers a browser needs to keep it out of frames and caches.
func TestPagesHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{})
	for _, c := range []struct{ path, ctype, cache string }{
		{"/", "text/html; charset=utf-8", "public, max-age=300"},
		{"/invite/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f", "text/html; charset=utf-8", "no-store"},
		{"/assets/invite.js", "text/javascript; charset=utf-8", "no-cache"},
		{"/assets/api.js", "text/javascript; charset=utf-8", "no-cache"},
		{"/assets/view.js", "text/javascript; charset=utf-8", "no-cache"},
		{"/assets/site.css", "text/css; charset=utf-8", "no-cache"},
		{"/favicon.ico", "image/x-icon", "no-cache"},
	} {
		resp, body := s.do(t, http.MethodGet, c.path, nil)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || h.Get("Content-Type") != c.ctype || h.Get("Cache-Control") != c.cache || len(body) == 0 {
			t.Errorf("GET %s: %d %q %q", c.path, resp.StatusCode, h.Get("Content-Type"), h.Get("Cache-Control"))
		}
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'none'", "require-trusted-types-for 'script'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: policy %q lacks %s", c.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", c.path, h)
		}
	}

	resp, _ := s.do(t, http.MethodGet, "/assets/site.css", nil)
	etag := resp.Header.Get("ETag")
	if r, b := s.do(t, http.MethodGet, "/assets/site.css", nil, "If-None-Match", etag); r.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Errorf("revalidation: %d, %d bytes", r.StatusCode, len(b))
	}
	if r, _ := s.do(t, http.MethodGet, "/assets/site.css", nil, "If-None-Match", `"other"`); r.StatusCode != http.StatusOK {
		t.Errorf("another ETag: %d", r.StatusCode)
	}
	if r, b := s.do(t, http.MethodHead, "/", nil); r.StatusCode != http.StatusOK || len(b) != 0 {
		t.Errorf("HEAD /: %d, %d bytes", r.StatusCode, len(b))
	}
	s.mustStatus(t, http.StatusNotFound, http.MethodGet, "/assets/nothing.js", nil)
	s.mustStatus(t, http.StatusNotFound, http.MethodGet, "/assets/..%2fllms.txt", nil, contract.SkipRequestHeader, "1")
	s.mustStatus(t, http.StatusNotFound, http.MethodGet, "/invite/not-a-uuid", nil, contract.SkipRequestHeader, "1")
}

// TestPagesHaveNothingInline: no inline script, style or event handler, so
// the policy can forbid them all; the pages name the origin nowhere.
func TestPagesHaveNothingInline(t *testing.T) {
	t.Parallel()
	inline := regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|javascript:`)
	script := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`)
	for _, name := range []string{"web/index.html", "web/invite.html"} {
		b, err := fs.ReadFile(consensus.Web, name)
		if err != nil {
			t.Fatal(err)
		}
		if m := inline.Find(b); m != nil {
			t.Errorf("%s has something inline: %s", name, m)
		}
		for _, m := range script.FindAllSubmatch(b, -1) {
			if !strings.Contains(string(m[1]), ` src="/assets/`) || strings.TrimSpace(string(m[2])) != "" {
				t.Errorf("%s has an inline script: %s", name, m[0])
			}
		}
		if strings.Count(string(b), "<script") != len(script.FindAll(b, -1)) {
			t.Errorf("%s has a script element this test cannot read", name)
		}
	}
	scripts, _ := fs.Glob(consensus.Web, "web/assets/*.js")
	for _, name := range scripts {
		b, _ := fs.ReadFile(consensus.Web, name)
		// Participant text is set with textContent only.
		if m := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`).Find(b); m != nil {
			t.Errorf("%s uses %s", name, m)
		}
	}
	if len(scripts) < 3 {
		t.Fatalf("scripts %v", scripts)
	}
}

// TestHomePageNamesTheSender: the home page's footer names the address
// this deployment's invitations come from (CONSENSUS_MAIL_FROM), escaped,
// so a person can tell a genuine invitation; the address for questions
// about Consensus is labelled as such.
func TestHomePageNamesTheSender(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_MAIL_FROM": `"Invites <b>" <invites+x&y@mail.example.org>`}})
	_, body := s.do(t, http.MethodGet, "/", nil)
	footer := regexp.MustCompile(`(?s)<footer class="site">(.*?)</footer>`).FindSubmatch(body)
	if footer == nil {
		t.Fatalf("no footer:\n%s", body)
	}
	f := string(footer[1])
	if !strings.Contains(f, "Invitations from this deployment are sent from <code>invites+x&amp;y@mail.example.org</code>.") ||
		strings.Contains(f, "<b>") || !strings.Contains(f, "Questions about Consensus: ") {
		t.Errorf("the footer does not name the sender invitations come from: %s", f)
	}
}
