package parked

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/testcert"
)

// A detached request's connection comes back to net/http for the client's
// next request, over plain TCP and over TLS (the listener of Listen inside
// the TLS one's, as the daemon serves). The next request is served as
// net/http serves any (its TLS state is there); HTTP/2 requests are not
// detached. Only Linux has the epoll set detaching needs.
func TestDetachedConnectionRejoins(t *testing.T) {
	if !CanWatch() {
		t.Skip("no epoll set here: held requests stay in net/http")
	}
	cert, roots := testcert.Pair()
	big := make([]byte, 200_000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"tls", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var l *Listener
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Proto", strconv.Itoa(r.ProtoMajor))
				w.Header().Set("X-TLS", strconv.FormatBool(r.TLS != nil))
				if r.URL.Path != "/hold" && r.URL.Path != "/big" {
					_, _ = io.WriteString(w, "plain")
					return
				}
				d := holdRequest(l, w, r)
				if d == nil {
					w.WriteHeader(http.StatusTeapot) // not detached
					return
				}
				go func() {
					time.Sleep(50 * time.Millisecond)
					if r.URL.Path == "/big" { // a body of known length, sent as written
						d.Writer().Header().Set("Content-Length", strconv.Itoa(len(big)))
						_, _ = d.Writer().Write(big[:1000])
						_, _ = d.Writer().Write(big[1000:])
					} else {
						d.Writer().Header().Set("ETag", `"held"`)
						d.Writer().WriteHeader(http.StatusNotModified)
					}
					d.Finish()
				}()
			})
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Second}
			ln := inner
			client := &http.Transport{}
			if tc.tls {
				srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
				ln = tls.NewListener(inner, srv.TLSConfig)
				client.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: "localhost"}
				client.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1
			}
			l = Listen(ln, Options{Idle: time.Minute})
			go func() { _ = srv.Serve(l) }()
			t.Cleanup(func() { _ = srv.Close() })
			base := "http://" + inner.Addr().String()
			if tc.tls {
				base = "https://localhost:" + strconv.Itoa(inner.Addr().(*net.TCPAddr).Port)
				client.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, inner.Addr().String())
				}
			}
			c := &http.Client{Transport: client, Timeout: 10 * time.Second}
			get := func(path string) (*http.Response, bool) {
				t.Helper()
				reused := false
				var body []byte
				req, _ := http.NewRequest(http.MethodGet, base+path, nil)
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
					GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || (path == "/big" && !bytes.Equal(body, big)) {
					t.Fatalf("%s: %d bytes, %v", path, len(body), err)
				}
				return resp, reused
			}
			if resp, _ := get("/hold"); resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != `"held"` ||
				resp.Header.Get("X-TLS") != strconv.FormatBool(tc.tls) {
				t.Fatalf("held: %d %v", resp.StatusCode, resp.Header)
			}
			for range 3 {
				resp, reused := get("/plain")
				if resp.StatusCode != http.StatusOK || !reused || resp.Header.Get("X-TLS") != strconv.FormatBool(tc.tls) {
					t.Fatalf("the next request: %d, reused %v, %v", resp.StatusCode, reused, resp.Header)
				}
				if resp, reused := get("/hold"); resp.StatusCode != http.StatusNotModified || !reused {
					t.Fatalf("held again: %d, reused %v", resp.StatusCode, reused)
				}
				if resp, reused := get("/big"); resp.StatusCode != http.StatusOK || !reused || resp.ContentLength != int64(len(big)) {
					t.Fatalf("held with a large body: %d, reused %v, Content-Length %d", resp.StatusCode, reused, resp.ContentLength)
				}
			}
			if !tc.tls {
				return
			}
			h2 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
				TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost"}, DialContext: client.DialContext}}
			resp, err := h2.Get(base + "/hold")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusTeapot {
				t.Fatalf("over HTTP/2: proto %d, status %d", resp.ProtoMajor, resp.StatusCode)
			}
		})
	}
}
