package daemon_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
)

// issueCert runs deploy/local/tls.sh, which makes a throwaway CA in dir on
// its first run and a new server certificate on every run, and returns the
// new certificate's serial number.
func issueCert(t *testing.T, dir string) *big.Int {
	t.Helper()
	out, err := exec.Command("../../deploy/local/tls.sh", dir, "localhost", "127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("tls.sh: %v\n%s", err, out)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf.SerialNumber
}

// tlsConn is one TLS connection speaking HTTP/1.1 by hand, so the test
// knows every request went over this very connection.
type tlsConn struct {
	conn *tls.Conn
	br   *bufio.Reader
}

func dialTLS(t *testing.T, addr string, roots *x509.CertPool) *tlsConn {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &tlsConn{conn: conn, br: bufio.NewReader(conn)}
}

func (c *tlsConn) serial() *big.Int { return c.conn.ConnectionState().PeerCertificates[0].SerialNumber }

// get sends GET path on the connection and returns the response.
func (c *tlsConn) get(t *testing.T, path string) *http.Response {
	t.Helper()
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c.conn, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path); err != nil {
		t.Fatalf("write on the open connection: %v", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read on the open connection: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestTLSReloadOnSIGHUP runs the real binary over HTTPS with a certificate
// from deploy/local/tls.sh, replaces the files and sends SIGHUP: the
// connection opened before keeps working (with its certificate), a new
// handshake gets the new certificate, and a broken file on a later SIGHUP
// keeps the certificate in use. Responses carry HSTS.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	dir := filepath.Join(t.TempDir(), "tls")
	first := issueCert(t, dir)
	roots := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil || !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("ca.crt: %v", err)
	}
	sink, err := mailsink.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	// Production settings: https origin, SMTP, a signing key.
	c := proctest.Start(t, proctest.Config{DatabaseURL: pgtest.URL(t), Origin: "https://localhost", MailURL: sink.SMTPURL(),
		Env: map[string]string{
			"CONSENSUS_ENV": "production", "CONSENSUS_RATE_LIMIT": "120", "CONSENSUS_OUTBOX_POLL": "1s",
			"CONSENSUS_TLS_CERT_FILE": filepath.Join(dir, "server.crt"), "CONSENSUS_TLS_KEY_FILE": filepath.Join(dir, "server.key"),
			"CONSENSUS_SIGNING_KEY": strings.Repeat("5e", 32),
		}}, 1)
	d := c.Replicas[0]

	before := dialTLS(t, d.Addr(), roots)
	if before.serial().Cmp(first) != 0 {
		t.Fatalf("served serial %x, want %x", before.serial(), first)
	}
	resp := before.get(t, "/api/health")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
		t.Fatalf("health over TLS: %d, HSTS %q", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
	}

	second := issueCert(t, dir)
	d.Signal(t, syscall.SIGHUP)
	d.WaitLog(t, "TLS certificate loaded", 2)
	if resp := before.get(t, "/api/health"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the connection opened before the reload: %d", resp.StatusCode)
	}
	if before.serial().Cmp(first) != 0 {
		t.Fatal("the open connection changed certificate")
	}
	after := dialTLS(t, d.Addr(), roots)
	if after.serial().Cmp(second) != 0 {
		t.Fatalf("a new handshake got serial %x, want the new %x", after.serial(), second)
	}
	if resp := after.get(t, "/api/health"); resp.StatusCode != http.StatusOK {
		t.Fatalf("health on the new connection: %d", resp.StatusCode)
	}

	// A broken certificate file: the reload fails, the last good one stays.
	if err := os.WriteFile(filepath.Join(dir, "server.crt"), []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Signal(t, syscall.SIGHUP)
	d.WaitLog(t, "TLS certificate reload failed; still serving the previous one", 1)
	if c := dialTLS(t, d.Addr(), roots); c.serial().Cmp(second) != 0 {
		t.Fatalf("after a failed reload: serial %x, want %x", c.serial(), second)
	}
	metrics := opsGet(t, d.OpsAddr(), "/metrics")
	for _, want := range []string{`consensus_tls_reloads_total{result="ok"} 1`, `consensus_tls_reloads_total{result="error"} 1`,
		"consensus_tls_certificate_expiry_timestamp_seconds "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The process still serves, on the connections of both certificates.
	if before.get(t, "/api/health").StatusCode != http.StatusOK || after.get(t, "/api/health").StatusCode != http.StatusOK {
		t.Fatal("consensusd stopped serving after a failed reload")
	}
}

// opsGet fetches path from the operations listener and returns the body.
func opsGet(t *testing.T, addr, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
