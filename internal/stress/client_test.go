package stress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// full reports whether the long variants run (STRESS=1, make stress).
func full() bool { return os.Getenv("STRESS") == "1" }

// venue is one deployment under test: its replicas, its database (read
// directly for invariants) and its mail drop.
type venue struct {
	t      testing.TB
	c      *proctest.Cluster
	db     *pgxpool.Pool
	dbURL  string
	mail   *mailbox
	http   *http.Client
	origin string
	op     string
}

type venueOpts struct {
	replicas int
	dbURL    string            // default: a fresh database on the shared test cluster
	env      map[string]string // extra consensusd settings
	mailURL  string            // default: a Maildir
	bin      string            // the consensusd to run; default: this tree's
}

func newVenue(t testing.TB, o venueOpts) *venue {
	t.Helper()
	if o.replicas == 0 {
		o.replicas = 1
	}
	if o.dbURL == "" {
		o.dbURL = pgtest.URL(t)
	}
	maildir := t.TempDir() + "/mail"
	c := proctest.Start(t, proctest.Config{DatabaseURL: o.dbURL, Maildir: maildir, MailURL: o.mailURL, Env: o.env, Binary: o.bin}, o.replicas)
	// The test reads the tables as the service's participant paths do, in
	// every workspace.
	pool, err := pgxpool.New(context.Background(), pgtest.ServiceURL(o.dbURL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &venue{
		t: t, c: c, db: pool, dbURL: o.dbURL, mail: newMailbox(maildir), origin: c.Config.Origin, op: c.Config.OperatorToken,
		http: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}},
	}
}

// url is the base URL of replica i.
func (v *venue) url(i int) string { return v.c.Replicas[i].URL() }

// reply is one answer (or transport failure) with its timing.
type reply struct {
	Method, URL    string
	Status         int
	Header         http.Header
	Body           []byte
	Err            error
	Sent, Received time.Time
}

func (r *reply) Elapsed() time.Duration { return r.Received.Sub(r.Sent) }

func (r *reply) OK() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Code is the problem code of a problem answer, or "".
func (r *reply) Code() string {
	var p struct{ Code string }
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") || json.Unmarshal(r.Body, &p) != nil {
		return ""
	}
	return p.Code
}

// String describes the answer for a failure message.
func (r *reply) String() string {
	if r.Err != nil {
		return fmt.Sprintf("%s %s: no answer after %v: %v", r.Method, shortURL(r.URL), r.Elapsed().Round(time.Millisecond), r.Err)
	}
	b := r.Body
	if len(b) > 200 {
		b = append(b[:200:200], "…"...)
	}
	return fmt.Sprintf("%s %s: %d after %v: %s", r.Method, shortURL(r.URL), r.Status, r.Elapsed().Round(time.Millisecond), bytes.TrimSpace(b))
}

func shortURL(u string) string {
	if i := strings.Index(u, "/api/"); i >= 0 {
		return u[i:]
	}
	return u
}

func (r *reply) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s: body is not a JSON object: %v", r, err)
	}
	return m
}

// hdr builds request headers from name, value pairs; a repeated name is
// sent as a repeated header line, and the name is sent exactly as written.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return h
}

// request is one HTTP request to send. A body is sent with Content-Type
// application/json unless the headers name a Content-Type (any spelling);
// noContentType sends none at all.
type request struct {
	Method, URL   string
	Header        http.Header
	Body          []byte
	NoContentType bool
	// Chunked sends the body without a Content-Length.
	Chunked bool
	Timeout time.Duration
}

// do sends req with client c and reads the whole answer; transport errors
// are returned in the reply, never fatal.
func do(c *http.Client, req request) *reply {
	var rd io.Reader
	if req.Body != nil {
		rd = bytes.NewReader(req.Body)
		if req.Chunked {
			rd = io.MultiReader(rd) // no Len: sent chunked
		}
	}
	ctx := context.Background()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	r := &reply{Method: req.Method, URL: req.URL}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, rd)
	if err != nil {
		r.Err = err
		return r
	}
	hasCT := false
	for k, vs := range req.Header {
		hr.Header[k] = append([]string(nil), vs...)
		if strings.EqualFold(k, "Content-Type") {
			hasCT = true
		}
	}
	if req.Body != nil && !hasCT && !req.NoContentType {
		hr.Header.Set("Content-Type", "application/json")
	}
	r.Sent = time.Now()
	resp, err := c.Do(hr)
	if err != nil {
		r.Received, r.Err = time.Now(), err
		return r
	}
	defer resp.Body.Close()
	r.Body, r.Err = io.ReadAll(resp.Body)
	r.Received, r.Status, r.Header = time.Now(), resp.StatusCode, resp.Header
	return r
}

func (v *venue) do(req request) *reply { return do(v.http, req) }

// get and post are the common shapes.
func (v *venue) get(url string, h http.Header) *reply {
	return v.do(request{Method: "GET", URL: url, Header: h})
}

func (v *venue) post(url string, h http.Header, body []byte) *reply {
	return v.do(request{Method: "POST", URL: url, Header: h, Body: body})
}

func agentURL(base, invitationID, action string) string {
	return base + "/api/v1/agent/invitations/" + invitationID + "/" + action
}

func (v *venue) opHeader() http.Header { return hdr("Authorization", "Bearer "+v.op) }

func participantAuth(token string) string { return "Consensus-Participant " + token }

// wantStatus fails the test unless r has the status.
func wantStatus(t testing.TB, what string, r *reply, status int) {
	t.Helper()
	if r.Err != nil || r.Status != status {
		t.Fatalf("%s: want %d, got %s", what, status, r)
	}
}

// problemMismatch says how r differs from a problem answer with the status
// and code (code "" accepts any), or "" when it matches: status, the
// application/problem+json media type, the code member and a type ending
// in /problems/<code>.
func problemMismatch(r *reply, status int, code string) string {
	if r.Err != nil {
		return r.String()
	}
	var why []string
	if r.Status != status {
		why = append(why, fmt.Sprintf("status %d, want %d", r.Status, status))
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var p struct {
		Type   string
		Code   string
		Status int
	}
	if mt != "application/problem+json" {
		why = append(why, fmt.Sprintf("Content-Type %q, want application/problem+json", r.Header.Get("Content-Type")))
	} else if err := json.Unmarshal(r.Body, &p); err != nil {
		why = append(why, "the body is not a JSON problem")
	} else {
		if code != "" && p.Code != code {
			why = append(why, fmt.Sprintf("code %q, want %q", p.Code, code))
		}
		if p.Code != "" && !strings.HasSuffix(p.Type, "/problems/"+p.Code) {
			why = append(why, fmt.Sprintf("type %q does not end in /problems/%s", p.Type, p.Code))
		}
		if p.Status != r.Status {
			why = append(why, fmt.Sprintf("status member %d differs from the HTTP status", p.Status))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ") + " — " + r.String()
}

func wantProblem(t testing.TB, what string, r *reply, status int, code string) {
	t.Helper()
	if m := problemMismatch(r, status, code); m != "" {
		t.Errorf("%s: %s", what, m)
	}
}

// retryAfter parses a Retry-After header (delay-seconds or an HTTP-date).
func retryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t), true
	}
	return 0, false
}

// eventually polls cond every 20 ms until it holds or the timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
