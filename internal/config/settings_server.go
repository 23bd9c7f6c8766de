package config

import (
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// Server is the part of Config about how the service meets the network
// and leaves it: TLS, the proxies in front, server timeouts, the
// operations listener and shutdown. Config embeds it.
type Server struct {
	// TLSCertFile and TLSKeyFile, both set, make the API listener serve
	// HTTPS; the files are read again on SIGHUP.
	TLSCertFile, TLSKeyFile string
	// TrustedProxies are the networks whose connections may name the
	// client address with X-Forwarded-For; empty trusts nobody.
	TrustedProxies []netip.Prefix
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// API server's timeouts (net/http.Server).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ParkedConnections lets held requests and streams over HTTP/1.1 wait
	// outside net/http (internal/parked).
	ParkedConnections bool
	// OpsListen is the operations listener: /metrics, /livez, /readyz, pprof.
	OpsListen string
	// Pprof serves net/http/pprof on the operations listener.
	Pprof bool
	// ShutdownDelay is how long /readyz fails before the API listener
	// closes; ShutdownGrace how long requests in flight may then take.
	ShutdownDelay, ShutdownGrace time.Duration
	// SigningKey is the service's Ed25519 signing key, nil when unset.
	SigningKey ed25519.PrivateKey
	// WebhookAllowLoopback lets webhook endpoints be loopback addresses
	// (local runs only).
	WebhookAllowLoopback bool
	// WebhookRoots, when set, are the only roots webhook deliveries trust
	// (a local test CA); nil means the system's.
	WebhookRoots *x509.CertPool
}

// TLS reports whether the API listener serves HTTPS itself.
func (s Server) TLS() bool { return s.TLSCertFile != "" }

// serverSettings are the rows of Server, read after the core rows.
var serverSettings = []Setting{
	{
		Name: "CONSENSUS_TLS_CERT_FILE",
		Doc:  "PEM certificate chain (leaf first) to serve HTTPS on `CONSENSUS_LISTEN`, with `CONSENSUS_TLS_KEY_FILE`; both files are read again on SIGHUP without dropping connections. Unset: plain HTTP, for a TLS-terminating proxy in front.",
		parse: func(c *Config, v string) error {
			c.TLSCertFile = v
			if v == "" {
				return nil
			}
			if !strings.HasPrefix(c.PublicOrigin, "https://") {
				return fmt.Errorf("CONSENSUS_TLS_CERT_FILE: serving HTTPS needs an https:// CONSENSUS_PUBLIC_ORIGIN, got %q", c.PublicOrigin)
			}
			b, err := os.ReadFile(v)
			if err != nil {
				return fmt.Errorf("CONSENSUS_TLS_CERT_FILE: %w", err)
			}
			if block, _ := pem.Decode(b); block == nil || block.Type != "CERTIFICATE" {
				return fmt.Errorf("CONSENSUS_TLS_CERT_FILE: %s holds no PEM certificate", v)
			} else if _, err := x509.ParseCertificate(block.Bytes); err != nil {
				return fmt.Errorf("CONSENSUS_TLS_CERT_FILE: %s: %w", v, err)
			}
			return nil
		},
	},
	{
		Name: "CONSENSUS_TLS_KEY_FILE",
		Doc:  "PEM private key of the certificate in `CONSENSUS_TLS_CERT_FILE`; set both or neither.",
		parse: func(c *Config, v string) error {
			c.TLSKeyFile = v
			switch {
			case v == "" && c.TLSCertFile == "":
				return nil
			case v == "":
				return errors.New("CONSENSUS_TLS_KEY_FILE: required when CONSENSUS_TLS_CERT_FILE is set")
			case c.TLSCertFile == "":
				return errors.New("CONSENSUS_TLS_CERT_FILE: required when CONSENSUS_TLS_KEY_FILE is set")
			}
			if _, err := LoadKeyPair(c.TLSCertFile, v); err != nil {
				return fmt.Errorf("CONSENSUS_TLS_KEY_FILE: %w", err)
			}
			return nil
		},
	},
	{
		Name: "CONSENSUS_TRUSTED_PROXIES",
		Doc:  "Comma-separated CIDRs (or addresses) of the proxies in front. Only a connection from one of them may name the client address, with `X-Forwarded-For` (the rightmost address outside these networks counts); otherwise the connection's peer is the client. Rate limits and logs use that address.",
		parse: func(c *Config, v string) (err error) {
			c.TrustedProxies, err = parseProxies(v)
			return err
		},
	},
	duration("CONSENSUS_READ_HEADER_TIMEOUT", "10s", time.Second, time.Hour,
		"How long a client may take to send a request's headers.",
		func(s *Server) *time.Duration { return &s.ReadHeaderTimeout }),
	duration("CONSENSUS_READ_TIMEOUT", "30s", time.Second, time.Hour,
		"How long a client may take to send a whole request, body included.",
		func(s *Server) *time.Duration { return &s.ReadTimeout }),
	duration("CONSENSUS_WRITE_TIMEOUT", "60s", time.Second, time.Hour,
		"How long the service may take to answer, from the end of the request's headers.",
		func(s *Server) *time.Duration { return &s.WriteTimeout }),
	duration("CONSENSUS_IDLE_TIMEOUT", "2m", time.Second, time.Hour,
		"How long an idle keep-alive connection stays open.",
		func(s *Server) *time.Duration { return &s.IdleTimeout }),
	{
		Name: "CONSENSUS_PARKED_CONNECTIONS", Default: "on",
		Doc: "`on`: over HTTP/1.1, held reads (`Prefer: wait`) and event streams wait outside Go's HTTP server, and a waiting connection costs no goroutine (Linux only), so a replica holds thousands of listeners; the listener also admits new connections a bounded number at a time. `off`: every request waits in its handler, as over HTTP/2. `make bench` reports the listener rows both ways.",
		parse: func(c *Config, v string) error {
			switch v {
			case "on", "off":
				c.ParkedConnections = v == "on"
				return nil
			}
			return fmt.Errorf("CONSENSUS_PARKED_CONNECTIONS: must be on or off, got %q", v)
		},
	},
	{
		Name: "CONSENSUS_OPS_LISTEN", Default: "127.0.0.1:8079",
		Doc: "Address (`host:port`) of the operations listener: `/metrics`, `/livez`, `/readyz` and, with `CONSENSUS_PPROF`, `/debug/pprof/`. Plain HTTP, no authentication: keep it off the public network. The default port is not Prometheus's 9090, which a developer's machine often runs; port 0 picks a free port, logged as `ops` when the service starts.",
		parse: func(c *Config, v string) error {
			c.OpsListen = v
			if err := checkListen(v); err != nil {
				return errors.New("CONSENSUS_OPS_LISTEN" + strings.TrimPrefix(err.Error(), "CONSENSUS_LISTEN"))
			}
			if v == c.Listen && !strings.HasSuffix(v, ":0") {
				return fmt.Errorf("CONSENSUS_OPS_LISTEN: must differ from CONSENSUS_LISTEN, both are %q", v)
			}
			return nil
		},
	},
	{
		Name: "CONSENSUS_PPROF", Default: "false",
		Doc: "`true` serves Go's profiler (`/debug/pprof/`) on the operations listener.",
		parse: func(c *Config, v string) (err error) {
			if c.Pprof, err = strconv.ParseBool(v); err != nil {
				return fmt.Errorf("CONSENSUS_PPROF: must be true or false, got %q", v)
			}
			return nil
		},
	},
	duration("CONSENSUS_SHUTDOWN_DELAY", "0s", 0, 5*time.Minute,
		"On SIGTERM, how long `/readyz` fails while the API still serves, so load balancers stop sending requests before the listener closes. Kubernetes' preStop pause does this job there.",
		func(s *Server) *time.Duration { return &s.ShutdownDelay }),
	duration("CONSENSUS_SHUTDOWN_GRACE", "30s", time.Second, 10*time.Minute,
		"On SIGTERM, once the listener has closed, how long requests in flight may take to finish; connections still open then are closed. Keep the service manager's stop timeout above delay plus grace.",
		func(s *Server) *time.Duration { return &s.ShutdownGrace }),
	{
		Name: "CONSENSUS_SIGNING_KEY", Secret: true, DefaultText: "required when `CONSENSUS_ENV=production`",
		Doc: "The service's Ed25519 signing key: a PKCS#8 PEM private key (`openssl genpkey -algorithm ed25519`) or a 32-byte seed, hex or base64. Signs records and webhook deliveries; keep every key ever used, the public halves verify what it signed.",
		parse: func(c *Config, v string) (err error) {
			if v == "" {
				if c.Env == EnvLocal {
					return nil
				}
				return errors.New("CONSENSUS_SIGNING_KEY: required in production (or CONSENSUS_SIGNING_KEY_FILE): an Ed25519 private key, PKCS#8 PEM or a 32-byte seed")
			}
			c.SigningKey, err = decodeSigningKey(v)
			return err
		},
	},
	{
		Name: "CONSENSUS_WEBHOOK_ALLOW_LOOPBACK", DefaultText: "`true` when `CONSENSUS_ENV=local`, else `false`",
		Doc: "Whether webhook endpoints may be loopback addresses (`true` or `false`). Only local runs may allow it; private, link-local, multicast and metadata addresses are always refused.",
		parse: func(c *Config, v string) error {
			switch v {
			case "":
				c.WebhookAllowLoopback = c.Env == EnvLocal
			case "true", "false":
				c.WebhookAllowLoopback = v == "true"
			default:
				return fmt.Errorf("CONSENSUS_WEBHOOK_ALLOW_LOOPBACK: must be true or false, got %q", v)
			}
			if c.WebhookAllowLoopback && c.Env != EnvLocal {
				return errors.New("CONSENSUS_WEBHOOK_ALLOW_LOOPBACK: loopback webhook endpoints are for local runs (CONSENSUS_ENV=local) only")
			}
			return nil
		},
		show: func(c *Config) string { return strconv.FormatBool(c.WebhookAllowLoopback) },
	},
	{
		Name: "CONSENSUS_WEBHOOK_CA_FILE",
		Doc:  "PEM file of root certificates that webhook deliveries trust instead of the system's, for a test receiver. Local runs (`CONSENSUS_ENV=local`) only.",
		parse: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if c.Env != EnvLocal {
				return errors.New("CONSENSUS_WEBHOOK_CA_FILE: a private webhook CA is for local runs (CONSENSUS_ENV=local) only")
			}
			b, err := os.ReadFile(v)
			if err != nil {
				return fmt.Errorf("CONSENSUS_WEBHOOK_CA_FILE: cannot read %s", v)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return fmt.Errorf("CONSENSUS_WEBHOOK_CA_FILE: %s holds no PEM certificate", v)
			}
			c.WebhookRoots = pool
			return nil
		},
	},
}

// duration is a row holding a duration between lo and hi.
func duration(name, def string, lo, hi time.Duration, doc string, field func(*Server) *time.Duration) Setting {
	return Setting{
		Name: name, Default: def, Doc: doc + fmt.Sprintf(" A duration from `%s` to `%s`.", short(lo), short(hi)),
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < lo || d > hi {
				return fmt.Errorf("%s: must be a duration from %s to %s such as 15s or 2m, got %q", name, short(lo), short(hi), v)
			}
			*field(&c.Server) = d
			if name == "CONSENSUS_READ_TIMEOUT" && d < c.ReadHeaderTimeout {
				return fmt.Errorf("CONSENSUS_READ_TIMEOUT: must be at least CONSENSUS_READ_HEADER_TIMEOUT (%s), got %s", c.ReadHeaderTimeout, d)
			}
			return nil
		},
	}
}

// short writes 1m0s as 1m and 0s as 0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func parseProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("CONSENSUS_TRUSTED_PROXIES: %q is neither a CIDR such as 10.0.0.0/8 nor an address", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("CONSENSUS_TRUSTED_PROXIES: %q would let every client choose its own address; name the proxies' networks", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// LoadKeyPair reads a PEM certificate chain and its private key, as the
// API listener serves them; an error names the file at fault, never a
// key's bytes.
func LoadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s are not a certificate and its private key: %w", certFile, keyFile, err)
	}
	return &pair, nil
}

func decodeSigningKey(v string) (ed25519.PrivateKey, error) {
	if strings.HasPrefix(v, "-----BEGIN") {
		block, _ := pem.Decode([]byte(v))
		if block == nil || block.Type != "PRIVATE KEY" {
			return nil, errors.New("CONSENSUS_SIGNING_KEY: a PEM key must be a PKCS#8 PRIVATE KEY block (openssl genpkey -algorithm ed25519)")
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("CONSENSUS_SIGNING_KEY: the PEM block is not a PKCS#8 private key")
		}
		if ed, ok := k.(ed25519.PrivateKey); ok {
			return ed, nil
		}
		return nil, fmt.Errorf("CONSENSUS_SIGNING_KEY: must be an Ed25519 key, got %T", k)
	}
	for _, dec := range []func(string) ([]byte, error){
		hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if b, err := dec(v); err == nil {
			if len(b) != ed25519.SeedSize {
				return nil, fmt.Errorf("CONSENSUS_SIGNING_KEY: a seed must be %d bytes, got %d", ed25519.SeedSize, len(b))
			}
			return ed25519.NewKeyFromSeed(b), nil
		}
	}
	return nil, errors.New("CONSENSUS_SIGNING_KEY: must be a PKCS#8 PEM Ed25519 key or a 32-byte seed in hex or base64")
}
