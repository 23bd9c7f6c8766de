package daemon

import (
	"crypto/tls"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/ops"
)

// expirySoon is how close to its expiry a certificate draws a warning at
// each (re)load.
const expirySoon = 14 * 24 * time.Hour

// certificate serves the API's TLS certificate and swaps it atomically on
// reload: handshakes already done keep their connection, every handshake
// after the swap gets the new certificate.
type certificate struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
	metrics           *ops.Metrics
	log               *slog.Logger
}

// loadCertificate reads the pair once; an error names the setting.
func loadCertificate(cfg *config.Config, m *ops.Metrics, log *slog.Logger) (*certificate, error) {
	c := &certificate{certFile: cfg.TLSCertFile, keyFile: cfg.TLSKeyFile, metrics: m, log: log}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certificate) load() error {
	pair, err := config.LoadKeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.current.Store(pair)
	leaf := pair.Leaf // X509KeyPair parses it
	c.metrics.CertificateLoaded(leaf.NotAfter)
	attrs := []any{slog.String("subject", leaf.Subject.String()), slog.Any("dns_names", leaf.DNSNames),
		slog.String("serial", leaf.SerialNumber.Text(16)), slog.Time("not_after", leaf.NotAfter)}
	if left := time.Until(leaf.NotAfter); left < expirySoon {
		c.log.Warn("TLS certificate loaded; it expires soon", attrs...)
	} else {
		c.log.Info("TLS certificate loaded", attrs...)
	}
	return nil
}

// reload reads the files again (SIGHUP). On failure the certificate in
// use stays and the error is logged; the service keeps serving.
func (c *certificate) reload() {
	err := c.load()
	c.metrics.CertificateReloaded(err)
	if err != nil {
		c.log.Error("TLS certificate reload failed; still serving the previous one", slog.String("error", err.Error()))
	}
}

// tlsConfig is the API listener's TLS configuration: TLS 1.2 or later,
// the certificate read at each handshake.
func (c *certificate) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.current.Load(), nil
		},
	}
}
