package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/contract"
)

// ServeContract serves the handler handlerFor builds for origin on a
// loopback port whose URL is that origin, until the test ends. It returns
// the origin and a client that validates every exchange against
// openapi.json. Both the internal and the external tests use it.
// Not servertest: servertest imports this package, so the internal tests
// (package httpapi) cannot import it; the external ones use it where they can.
func ServeContract(t *testing.T, handlerFor func(origin string) http.Handler) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = handlerFor(origin)
	srv.Start()
	t.Cleanup(srv.Close)
	val, err := contract.Load(consensus.OpenAPI, origin)
	if err != nil {
		t.Fatal(err)
	}
	return origin, &http.Client{Transport: val.Transport(t, nil)}
}

// DoRequest sends one request to origin+path through client and returns
// the answer with its body read; headers alternate name, value. A body is
// sent as application/json unless the headers say otherwise. Both the
// internal and the external tests of this package use it.
func DoRequest(t *testing.T, client *http.Client, origin, method, path string, body []byte, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, origin+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
