package contract_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/contract"
)

// canned is one fixed answer of the fake server.
type canned struct {
	status  int
	headers map[string]string
	body    string
}

const (
	requestID = "0123456789abcdef01234567"
	healthOK  = `{"status":"ok","service":"consensus","version":"dev","database":"ok"}`
	secret    = "csp_TOPSECRETtokenVALUE"
)

func problem(status int, code string, extra string) string {
	return fmt.Sprintf(`{"type":"https://consensus.md/problems/%s","title":"t","status":%d,"detail":"d","code":"%s"%s}`, code, status, code, extra)
}

// roundTrip sends req through the validating transport to a server that
// answers with c, and returns what the transport reported.
func roundTrip(t *testing.T, req *http.Request, c canned, check func(*http.Request)) []string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			check(r)
		}
		for k, v := range c.headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(c.status)
		_, _ = w.Write([]byte(c.body))
	}))
	defer srv.Close()
	v, err := contract.Load(consensus.OpenAPI, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &contract.Recorder{}
	u := srv.URL + req.URL.Path
	if req.URL.RawQuery != "" {
		u += "?" + req.URL.RawQuery
	}
	out, err := http.NewRequest(req.Method, u, req.Body)
	if err != nil {
		t.Fatal(err)
	}
	out.Header = req.Header
	client := &http.Client{Transport: v.Transport(rec, nil)}
	resp, err := client.Do(out)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	errs := rec.Violations()
	for _, e := range errs {
		t.Logf("reported: %s", e)
	}
	return errs
}

func get(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://x"+path, nil)
	return r
}

func jsonHeaders(extra map[string]string) map[string]string {
	h := map[string]string{"Content-Type": "application/json; charset=utf-8", "X-Request-Id": requestID}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func problemHeaders(extra map[string]string) map[string]string {
	h := map[string]string{"Content-Type": "application/problem+json; charset=utf-8", "X-Request-Id": requestID, "Cache-Control": "no-store"}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func TestValidatorBites(t *testing.T) {
	t.Parallel()
	okHealth := canned{200, jsonHeaders(map[string]string{"Cache-Control": "no-cache"}), healthOK}
	cases := []struct {
		name string
		req  *http.Request
		resp canned
		want string // substring of the report; "" means no report
	}{
		{"documented answer passes", get("/api/health"), okHealth, ""},
		{"undocumented field", get("/api/health"),
			canned{200, okHealth.headers, strings.TrimSuffix(healthOK, "}") + `,"uptime":3}`}, `undocumented ["uptime"]`},
		{"undocumented status", get("/api/health"), canned{418, okHealth.headers, healthOK}, "status is not supported"},
		{"missing required header", get("/api/health"),
			canned{200, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-cache"}, healthOK}, `"X-Request-Id" missing`},
		{"wrong header value", get("/api/health"), canned{200, jsonHeaders(map[string]string{"Cache-Control": "public, max-age=60"}), healthOK}, `"Cache-Control"`},
		{"undocumented content type", get("/api/health"),
			canned{200, map[string]string{"Content-Type": "text/plain", "X-Request-Id": requestID, "Cache-Control": "no-cache"}, healthOK}, "Content-Type"},
		{"missing required field", get("/api/health"),
			canned{200, okHealth.headers, `{"status":"ok","service":"consensus","version":"dev"}`}, `missing ["database"]`},
		{"problem with unknown code", get("/api/v1/admin/agreements/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f"),
			canned{404, problemHeaders(nil), problem(404, "gone", "")}, "/code"},
		{"401 without WWW-Authenticate", get("/api/v1/admin/agreements"),
			canned{401, problemHeaders(nil), problem(401, "unauthorized", "")}, `"WWW-Authenticate" missing`},
		{"401 with WWW-Authenticate passes", get("/api/v1/admin/agreements"),
			canned{401, problemHeaders(map[string]string{"WWW-Authenticate": `Bearer realm="consensus-operator"`}), problem(401, "unauthorized", "")}, ""},
		{"unknown path must be the 404 problem", get("/nowhere"), canned{200, okHealth.headers, healthOK}, "status is not supported"},
		{"unknown path with the 404 problem passes", get("/nowhere"), canned{404, problemHeaders(nil), problem(404, "not-found", "")}, ""},
		{"405 needs Allow", func() *http.Request { r, _ := http.NewRequest(http.MethodDelete, "http://x/api/health", nil); return r }(),
			canned{405, problemHeaders(nil), problem(405, "method-not-allowed", "")}, `"Allow" missing`},
		{"HEAD headers are checked", func() *http.Request {
			r, _ := http.NewRequest(http.MethodHead, "http://x/.well-known/api-catalog", nil)
			return r
		}(),
			canned{200, map[string]string{"Content-Type": "application/linkset+json", "X-Request-Id": requestID, "Cache-Control": "public, max-age=300"}, ""}, `"Link" missing`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := roundTrip(t, tc.req, tc.resp, nil)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected report: %q", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("report %q does not mention %q", errs, tc.want)
			}
		})
	}
}

func TestRequestValidationAndOptOut(t *testing.T) {
	t.Parallel()
	path := "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/events"
	bad := func(skip bool) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://x"+path, strings.NewReader(`{"action":"vote","revision":1}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Consensus-Participant "+secret)
		r.Header.Set("Idempotency-Key", "key-00000001")
		if skip {
			r.Header.Set(contract.SkipRequestHeader, "1")
		}
		return r
	}
	answer := canned{400, problemHeaders(nil), problem(400, "invalid-request", `,"field":"action"`)}

	errs := roundTrip(t, bad(false), answer, nil)
	if len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), "request violates") {
		t.Fatalf("a malformed request was not reported: %q", errs)
	}
	sawHeader := false
	errs = roundTrip(t, bad(true), answer, func(r *http.Request) { sawHeader = r.Header.Get(contract.SkipRequestHeader) != "" })
	if len(errs) > 0 {
		t.Fatalf("opted-out request still reported: %q", errs)
	}
	if sawHeader {
		t.Fatal("the opt-out header reached the server")
	}
}

func TestReportsNeverEchoCredentials(t *testing.T) {
	t.Parallel()
	path := "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/room"
	r, _ := http.NewRequest(http.MethodGet, "http://x"+path+"?token="+secret, nil)
	r.Header.Set("Authorization", "Consensus-Participant "+secret)
	// A problem that leaks the token in an undocumented member and in a
	// malformed header: both must be reported, neither value printed.
	answer := canned{401, problemHeaders(map[string]string{"WWW-Authenticate": secret}), problem(401, "unauthorized", `,"token":"`+secret+`"`)}
	errs := roundTrip(t, r, answer, nil)
	joined := strings.Join(errs, "\n")
	if len(errs) == 0 {
		t.Fatal("nothing reported")
	}
	if strings.Contains(joined, "TOPSECRET") {
		t.Fatalf("a report echoes the credential: %q", errs)
	}
}

// TestRecorderCollects: a program that is not a test checks the contract
// through a Recorder; its Err is nil until a violation arrives.
func TestRecorderCollects(t *testing.T) {
	t.Parallel()
	var rec contract.Recorder
	if err := rec.Err(); err != nil {
		t.Fatalf("empty recorder: %v", err)
	}
	rec.Errorf("contract: GET %s -> %d: first", "/api/health", 418)
	rec.Errorf("second")
	if got := rec.Violations(); len(got) != 2 || got[0] != "contract: GET /api/health -> 418: first" {
		t.Fatalf("violations %q", got)
	}
	if err := rec.Err(); err == nil || !strings.Contains(err.Error(), "first\nsecond") {
		t.Fatalf("Err %v", err)
	}
}
