package ingest

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/testcert"
	"github.com/emersion/go-imap/v2/imapserver"
)

// selfSigned returns a server configuration with the test certificate and
// a client configuration trusting only it, for 127.0.0.1.
func selfSigned(t *testing.T) (*tls.Config, *tls.Config) {
	t.Helper()
	cert, pool := testcert.Pair()
	return &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

func TestIMAPSourceTLS(t *testing.T) {
	t.Parallel()
	serverTLS, clientTLS := selfSigned(t)
	for _, mode := range []string{"starttls", "implicit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv, user := newIMAPServer(t, imapserver.Options{TLSConfig: serverTLS}) // enables STARTTLS; no InsecureAuth
			appendMsg(t, user, readFixture(t, "plain-7bit.rfc822"))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cfg := IMAPConfig{Addr: ln.Addr().String(), Username: imapUser, Password: imapPass, TLSConfig: clientTLS}
			if mode == "implicit" {
				ln = tls.NewListener(ln, serverTLS)
				cfg.TLS = true
			} else {
				cfg.StartTLS = true
			}
			go srv.Serve(ln)
			src, err := NewIMAPSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if got := fetchIDs(t, ctx, src); len(got) != 1 {
				t.Fatalf("fetched %d, want 1", len(got))
			}
		})
	}
}
