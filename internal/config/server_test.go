package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate and its key as PEM files.
func writePair(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{name}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestServerDefaults: the documented defaults are what a production
// configuration without these settings gets.
func TestServerDefaults(t *testing.T) {
	t.Parallel()
	c, err := load(base())
	if err != nil {
		t.Fatal(err)
	}
	want := Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, OpsListen: "127.0.0.1:8079", ShutdownGrace: 30 * time.Second}
	got := c.Server
	got.SigningKey = nil
	if got.TLS() || len(got.TrustedProxies) != 0 || got.Pprof || got.ShutdownDelay != 0 || !got.ParkedConnections ||
		got.ReadHeaderTimeout != want.ReadHeaderTimeout || got.ReadTimeout != want.ReadTimeout || got.WriteTimeout != want.WriteTimeout ||
		got.IdleTimeout != want.IdleTimeout || got.OpsListen != want.OpsListen || got.ShutdownGrace != want.ShutdownGrace {
		t.Fatalf("%+v", got)
	}
	if len(c.SigningKey) != ed25519.PrivateKeySize {
		t.Fatalf("signing key of %d bytes", len(c.SigningKey))
	}
}

// TestServerSettingsRefused: one case (or more) per setting; each error
// starts with the setting's name and never echoes a secret.
func TestServerSettingsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := writePair(t, dir, "one.test")
	_, otherKey := writePair(t, dir, "two.test")
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	rsaPEM := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----"
	cases := []struct {
		name, setting string
		set           map[string]string
	}{
		{"maildir in production", "CONSENSUS_MAIL_URL", map[string]string{"CONSENSUS_MAIL_URL": "maildir:///var/mail/consensus"}},
		{"no operator token", "CONSENSUS_OPERATOR_TOKEN", map[string]string{"CONSENSUS_OPERATOR_TOKEN": ""}},
		{"no token key", "CONSENSUS_TOKEN_KEY", map[string]string{"CONSENSUS_TOKEN_KEY": ""}},
		{"no signing key in production", "CONSENSUS_SIGNING_KEY", map[string]string{"CONSENSUS_SIGNING_KEY": ""}},
		{"short signing seed", "CONSENSUS_SIGNING_KEY", map[string]string{"CONSENSUS_SIGNING_KEY": "abcdef0123"}},
		{"signing key not a key", "CONSENSUS_SIGNING_KEY", map[string]string{"CONSENSUS_SIGNING_KEY": "!!secret-signing!!"}},
		{"signing key bad PEM", "CONSENSUS_SIGNING_KEY", map[string]string{"CONSENSUS_SIGNING_KEY": rsaPEM}},
		{"signing key file missing", "CONSENSUS_SIGNING_KEY_FILE", map[string]string{"CONSENSUS_SIGNING_KEY": "", "CONSENSUS_SIGNING_KEY_FILE": filepath.Join(dir, "nope")}},
		{"cert without key", "CONSENSUS_TLS_KEY_FILE", map[string]string{"CONSENSUS_TLS_CERT_FILE": cert}},
		{"key without cert", "CONSENSUS_TLS_CERT_FILE", map[string]string{"CONSENSUS_TLS_KEY_FILE": key}},
		{"cert file missing", "CONSENSUS_TLS_CERT_FILE", map[string]string{"CONSENSUS_TLS_CERT_FILE": filepath.Join(dir, "nope"), "CONSENSUS_TLS_KEY_FILE": key}},
		{"cert file garbage", "CONSENSUS_TLS_CERT_FILE", map[string]string{"CONSENSUS_TLS_CERT_FILE": garbage, "CONSENSUS_TLS_KEY_FILE": key}},
		{"key of another cert", "CONSENSUS_TLS_KEY_FILE", map[string]string{"CONSENSUS_TLS_CERT_FILE": cert, "CONSENSUS_TLS_KEY_FILE": otherKey}},
		{"key file garbage", "CONSENSUS_TLS_KEY_FILE", map[string]string{"CONSENSUS_TLS_CERT_FILE": cert, "CONSENSUS_TLS_KEY_FILE": garbage}},
		{"TLS with an http origin", "CONSENSUS_TLS_CERT_FILE", map[string]string{"CONSENSUS_ENV": "local", "CONSENSUS_PUBLIC_ORIGIN": "http://127.0.0.1:8080",
			"CONSENSUS_MAIL_URL": "maildir:///tmp/m", "CONSENSUS_TLS_CERT_FILE": cert, "CONSENSUS_TLS_KEY_FILE": key}},
		{"proxy not a CIDR", "CONSENSUS_TRUSTED_PROXIES", map[string]string{"CONSENSUS_TRUSTED_PROXIES": "10.0.0.0/8, proxy.example"}},
		{"proxy bad mask", "CONSENSUS_TRUSTED_PROXIES", map[string]string{"CONSENSUS_TRUSTED_PROXIES": "10.0.0.0/33"}},
		{"proxy everyone", "CONSENSUS_TRUSTED_PROXIES", map[string]string{"CONSENSUS_TRUSTED_PROXIES": "0.0.0.0/0"}},
		{"read header timeout", "CONSENSUS_READ_HEADER_TIMEOUT", map[string]string{"CONSENSUS_READ_HEADER_TIMEOUT": "10"}},
		{"read header timeout zero", "CONSENSUS_READ_HEADER_TIMEOUT", map[string]string{"CONSENSUS_READ_HEADER_TIMEOUT": "0s"}},
		{"read timeout", "CONSENSUS_READ_TIMEOUT", map[string]string{"CONSENSUS_READ_TIMEOUT": "forever"}},
		{"read shorter than header", "CONSENSUS_READ_TIMEOUT", map[string]string{"CONSENSUS_READ_TIMEOUT": "5s"}},
		{"write timeout", "CONSENSUS_WRITE_TIMEOUT", map[string]string{"CONSENSUS_WRITE_TIMEOUT": "2h"}},
		{"idle timeout", "CONSENSUS_IDLE_TIMEOUT", map[string]string{"CONSENSUS_IDLE_TIMEOUT": "-1s"}},
		{"parked connections not on or off", "CONSENSUS_PARKED_CONNECTIONS", map[string]string{"CONSENSUS_PARKED_CONNECTIONS": "true"}},
		{"ops listen", "CONSENSUS_OPS_LISTEN", map[string]string{"CONSENSUS_OPS_LISTEN": "9090"}},
		{"ops listen on the API port", "CONSENSUS_OPS_LISTEN", map[string]string{"CONSENSUS_OPS_LISTEN": "127.0.0.1:8080"}},
		{"pprof", "CONSENSUS_PPROF", map[string]string{"CONSENSUS_PPROF": "sometimes"}},
		{"shutdown delay", "CONSENSUS_SHUTDOWN_DELAY", map[string]string{"CONSENSUS_SHUTDOWN_DELAY": "1h"}},
		{"shutdown grace", "CONSENSUS_SHUTDOWN_GRACE", map[string]string{"CONSENSUS_SHUTDOWN_GRACE": "0s"}},
		{"webhook loopback in production", "CONSENSUS_WEBHOOK_ALLOW_LOOPBACK", map[string]string{"CONSENSUS_WEBHOOK_ALLOW_LOOPBACK": "true"}},
		{"webhook loopback not a bool", "CONSENSUS_WEBHOOK_ALLOW_LOOPBACK", map[string]string{"CONSENSUS_WEBHOOK_ALLOW_LOOPBACK": "yes"}},
		{"webhook CA in production", "CONSENSUS_WEBHOOK_CA_FILE", map[string]string{"CONSENSUS_WEBHOOK_CA_FILE": cert}},
		{"webhook CA garbage locally", "CONSENSUS_WEBHOOK_CA_FILE", map[string]string{"CONSENSUS_ENV": "local", "CONSENSUS_PUBLIC_ORIGIN": "http://127.0.0.1:8080",
			"CONSENSUS_MAIL_URL": "maildir:///tmp/m", "CONSENSUS_WEBHOOK_CA_FILE": garbage}},
	}
	for _, c := range cases {
		env := base()
		for k, v := range c.set {
			env[k] = v
		}
		_, err := load(env)
		if err == nil || !strings.HasPrefix(err.Error(), c.setting+":") {
			t.Errorf("%s: error %v does not name %s", c.name, err, c.setting)
			continue
		}
		if strings.Contains(err.Error(), "secret-signing") || strings.Contains(err.Error(), "MC4CAQAw") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error echoes a secret or spans lines: %v", c.name, err)
		}
	}
}

// TestServerSettingsAccepted: the forms each setting takes.
func TestServerSettingsAccepted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := writePair(t, dir, "consensus.example")
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	pkcs8, err := x509.MarshalPKCS8PrivateKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "signing-key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := base()
	env["CONSENSUS_TLS_CERT_FILE"], env["CONSENSUS_TLS_KEY_FILE"] = cert, key
	env["CONSENSUS_TRUSTED_PROXIES"] = "10.0.0.0/8, 192.168.1.7,2001:db8::/32 ::ffff:172.16.0.1"
	env["CONSENSUS_READ_HEADER_TIMEOUT"], env["CONSENSUS_READ_TIMEOUT"], env["CONSENSUS_WRITE_TIMEOUT"], env["CONSENSUS_IDLE_TIMEOUT"] = "5s", "20s", "3m", "90s"
	env["CONSENSUS_OPS_LISTEN"], env["CONSENSUS_PPROF"], env["CONSENSUS_PARKED_CONNECTIONS"] = ":9100", "true", "off"
	env["CONSENSUS_SHUTDOWN_DELAY"], env["CONSENSUS_SHUTDOWN_GRACE"] = "5s", "45s"
	env["CONSENSUS_SIGNING_KEY"], env["CONSENSUS_SIGNING_KEY_FILE"] = "", keyFile
	c, err := load(env)
	if err != nil {
		t.Fatal(err)
	}
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("172.16.0.1/32")}
	if !c.TLS() || c.TLSCertFile != cert || c.TLSKeyFile != key || len(c.TrustedProxies) != len(proxies) {
		t.Fatalf("%+v", c.Server)
	}
	for i, p := range proxies {
		if c.TrustedProxies[i] != p {
			t.Errorf("proxy %d: %s, want %s", i, c.TrustedProxies[i], p)
		}
	}
	if c.ReadHeaderTimeout != 5*time.Second || c.ReadTimeout != 20*time.Second || c.WriteTimeout != 3*time.Minute || c.IdleTimeout != 90*time.Second ||
		c.OpsListen != ":9100" || !c.Pprof || c.ParkedConnections || c.ShutdownDelay != 5*time.Second || c.ShutdownGrace != 45*time.Second {
		t.Fatalf("%+v", c.Server)
	}
	if !c.SigningKey.Equal(ed25519.NewKeyFromSeed(seed)) {
		t.Fatal("the PEM signing key was not read")
	}
	// A seed in base64url gives the same key as its PEM form.
	env["CONSENSUS_SIGNING_KEY"], env["CONSENSUS_SIGNING_KEY_FILE"] = base64.RawURLEncoding.EncodeToString(seed), ""
	if c, err = load(env); err != nil || !c.SigningKey.Equal(ed25519.NewKeyFromSeed(seed)) {
		t.Fatalf("seed: %v", err)
	}
	// Local runs may go without a signing key and deliver into a Maildir.
	c, err = Load(localEnv(nil))
	if err != nil || c.SigningKey != nil || c.MailURL != "maildir:///tmp/m" {
		t.Fatalf("local: %v", err)
	}
}
