package ingest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapserver"
)

// selfSigned returns a server certificate for 127.0.0.1 and a client config
// trusting only it.
func selfSigned(t *testing.T) (*tls.Config, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "imap test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return server, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
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
