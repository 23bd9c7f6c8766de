package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// TestProblemTableMatchesOpenAPI: the table and openapi.json's ProblemCode
// enum name the same codes, in both directions, each once.
func TestProblemTableMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas struct {
				ProblemCode struct {
					Enum []string `json:"enum"`
				} `json:"ProblemCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(consensus.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas.ProblemCode.Enum
	if len(enum) == 0 {
		t.Fatal("openapi.json has no ProblemCode enum")
	}
	var codes []string
	for i, pt := range problemTypes {
		if pt.Code == "" {
			t.Errorf("ProblemCode %d has no row in the table", i)
		}
		if slices.Contains(codes, pt.Code) {
			t.Errorf("the table lists %s twice", pt.Code)
		}
		codes = append(codes, pt.Code)
		if !slices.Contains(enum, pt.Code) {
			t.Errorf("%s is in the problem table but not in openapi.json's ProblemCode enum (api/components.yaml)", pt.Code)
		}
	}
	for _, code := range enum {
		if !slices.Contains(codes, code) {
			t.Errorf("%s is in openapi.json's ProblemCode enum but not in the problem table", code)
		}
	}
}

var llmsProblemRow = regexp.MustCompile("^\\| ([0-9]{3}) \\| `([a-z-]+)` \\|")

// TestProblemTableMatchesLLMsFull: llms-full.txt promises every problem code
// with its status; the table and its list agree in both directions.
func TestProblemTableMatchesLLMsFull(t *testing.T) {
	t.Parallel()
	raw, err := consensus.Web.ReadFile("web/llms-full.txt")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := llmsProblemRow.FindStringSubmatch(line); m != nil {
			listed[m[2]], _ = strconv.Atoi(m[1])
		}
	}
	for _, pt := range problemTypes {
		if status, ok := listed[pt.Code]; !ok || status != pt.Status {
			t.Errorf("llms-full.txt lists %s with status %d, the table says %d", pt.Code, status, pt.Status)
		}
		delete(listed, pt.Code)
	}
	for code := range listed {
		t.Errorf("llms-full.txt lists %s, which the table does not have", code)
	}
}

// TestProblemTableRows: every row is complete, and every domain error it
// lists reaches that row (no earlier row shadows it), also when wrapped.
func TestProblemTableRows(t *testing.T) {
	t.Parallel()
	for _, pt := range problemTypes {
		if pt.Status < 400 || pt.Status > 599 || pt.Title == "" || pt.Explanation == "" ||
			strings.TrimSpace(pt.Explanation) != pt.Explanation || !regexp.MustCompile(`^[a-z-]+$`).MatchString(pt.Code) {
			t.Errorf("incomplete row %+v", pt)
		}
		for _, e := range pt.Errors {
			got, _, _, _ := problemFor(fmt.Errorf("venue: some step: %w", e))
			if got.Code != pt.Code {
				t.Errorf("%v answers %s, its row is %s", e, got.Code, pt.Code)
			}
		}
	}
}

// problemServer is a Server with no venue behind it, on a loopback port
// whose client validates every exchange against openapi.json. It serves
// what needs no database: problem pages, health, and the refusals made
// before a credential is looked up. Not servertest: it is an internal test
// (it reaches the Server's unexported fields), and servertest imports httpapi.
type problemServer struct {
	*Server
	origin string
	client *http.Client
	logs   logFile
}

// logFile is the server's log, written to a file so that a test can read
// it while the server may still write.
type logFile string

func (f logFile) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

// pingFunc is a Pinger from a function.
type pingFunc func(ctx context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

func newProblemServer(t *testing.T, p Pinger) *problemServer {
	t.Helper()
	logs := logFile(filepath.Join(t.TempDir(), "log"))
	out, err := os.Create(string(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	var s *Server
	origin, client := ServeContract(t, func(origin string) http.Handler {
		s = New(Options{Origin: origin, Pinger: p, Logger: slog.New(slog.NewJSONHandler(out, nil)), Version: "test"})
		return s.Handler()
	})
	return &problemServer{Server: s, origin: origin, client: client, logs: logs}
}

// do sends one request; headers alternate name, value.
func (s *problemServer) do(t *testing.T, method, path string, body []byte, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return DoRequest(t, s.client, s.origin, method, path, body, headers...)
}

// TestProblemPages: /problems/<code> serves every row of the table and
// nothing else.
func TestProblemPages(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	for _, pt := range problemTypes {
		resp, body := s.do(t, http.MethodGet, "/problems/"+pt.Code, nil)
		want := pt.Code + " (HTTP " + strconv.Itoa(pt.Status) + "): " + pt.Title + "\n\n" + pt.Explanation + "\n"
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("/problems/%s: %d %q", pt.Code, resp.StatusCode, body)
		}
	}
	resp, body := s.do(t, http.MethodGet, "/problems/no-such-code", nil, contract.SkipRequestHeader, "1")
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != http.StatusNotFound || p.Code != "not-found" {
		t.Fatalf("unknown code: %d %s", resp.StatusCode, body)
	}
}

// TestWriteProblem: the writer maps each kind of error to its problem, adds
// the field and the challenge, hides internals and logs only 5xx.
func TestWriteProblem(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	for _, tc := range []struct {
		name        string
		err         error
		code, field string
		challenge   string
		detail      string // exact detail when set
		hidden      string // must not appear in the body
		logged      bool
	}{
		{name: "validation", err: fmt.Errorf("venue: claim: %w", &room.ValidationError{Field: "inbox", Reason: "is required"}),
			code: "invalid-request", field: "inbox", detail: "inbox: is required"},
		{name: "http field", err: invalidField("limit", "must be a whole number from 1 to 100"), code: "invalid-request", field: "limit",
			detail: "limit: must be a whole number from 1 to 100"},
		{name: "too large", err: tooLarge(bodyLimit{Bytes: 10, Wire: 10}), code: "payload-too-large", detail: "the body must be at most 10 bytes"},
		{name: "session", err: &venue.UnauthorizedError{Scheme: venue.SchemeSession}, code: "unauthorized", challenge: venue.SchemeSession},
		{name: "operator", err: &Error{Code: ProblemUnauthorized, Detail: "x", Challenge: operatorChallenge}, code: "unauthorized", challenge: operatorChallenge},
		{name: "not found", err: fmt.Errorf("venue: exchange: %w: wrong secret", room.ErrNotFound), code: "not-found",
			detail: "Nothing is available at this address.", hidden: "wrong secret"},
		{name: "race", err: fmt.Errorf("venue: claim: %w: participants_token_hash_key", room.ErrConflict), code: "retry-conflict", hidden: "participants_token_hash_key"},
		{name: "closed", err: room.ErrRoomClosed, code: "room-closed", detail: room.ErrRoomClosed.Error()},
		{name: "closed, wrapped", err: fmt.Errorf("venue: amend agreement: %w", room.ErrRoomClosed), code: "room-closed", detail: room.ErrRoomClosed.Error(), hidden: "venue:"},
		{name: "artifact", err: venue.ErrArtifactNotReady, code: "artifact-not-ready"},
		{name: "resend", err: venue.ErrNotResendable, code: "not-resendable"},
		{name: "unknown", err: errors.New("pgx: connection reset by db.internal:5432"), code: "internal", hidden: "db.internal", logged: true},
		{name: "unknown code", err: &Error{Code: problemCodeCount + 1, Detail: "bug"}, code: "internal", logged: true},
		{name: "database down", err: fmt.Errorf("store: get session: %w: %w", room.ErrUnavailable, errors.New("dial unix /run/db.sock: connect: refused")),
			code: "unavailable", hidden: "db.sock", logged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req = req.WithContext(context.WithValue(req.Context(), requestInfoKey, &requestInfo{id: "rid-" + tc.name}))
			s.writeProblem(rec, req, tc.err)
			var p Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			pt := problemByCode[tc.code]
			if p.Code != tc.code || p.Status != pt.Status || rec.Code != pt.Status || p.Title != pt.Title ||
				p.Type != s.origin+"/problems/"+tc.code || p.Field != tc.field || p.Detail == "" {
				t.Fatalf("got %d %+v", rec.Code, p)
			}
			if tc.detail != "" && p.Detail != tc.detail {
				t.Errorf("detail %q, want %q", p.Detail, tc.detail)
			}
			if tc.hidden != "" && strings.Contains(rec.Body.String(), tc.hidden) {
				t.Errorf("the body shows %q: %s", tc.hidden, rec.Body)
			}
			if got, want := rec.Header().Get("Retry-After"), map[bool]string{true: "2"}[tc.code == "unavailable"]; got != want {
				t.Errorf("Retry-After %q, want %q", got, want)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if rec.Header().Get("Content-Type") != "application/problem+json; charset=utf-8" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("headers %v", rec.Header())
			}
			if logged := strings.Contains(s.logs.String(), `"request_id":"rid-`+tc.name+`"`); logged != tc.logged {
				t.Errorf("logged %v, want %v: %s", logged, tc.logged, s.logs)
			}
		})
	}
}

// TestPanicAnswersInternal: a panicking handler answers the generic 500
// and logs the panic under the request id.
func TestPanicAnswersInternal(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	h := s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom at line 7") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "boom") || !strings.Contains(s.logs.String(), "boom at line 7") {
		t.Fatalf("%d %s; log %s", rec.Code, rec.Body, s.logs)
	}
}
