// Package replytest runs the real parts the reply tests need: a Dovecot
// IMAP server as the reply mailbox and a DNS server publishing DKIM keys,
// both on loopback.
package replytest

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
)

// DNS publishes TXT records on loopback UDP.
func DNS(t testing.TB, records map[string]string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		rec, ok := records[strings.ToLower(strings.TrimSuffix(q.Name, "."))]
		if !ok {
			m.Rcode = dns.RcodeNameError
		} else {
			var parts []string
			for len(rec) > 200 {
				parts, rec = append(parts, rec[:200]), rec[200:]
			}
			parts = append(parts, rec)
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: parts})
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// Dovecot starts a real Dovecot IMAP server on loopback with one mailbox
// user and returns its address.
func Dovecot(t testing.TB, user, password string) string {
	t.Helper()
	bin := "/usr/sbin/dovecot"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("dovecot is not installed (apt-get install dovecot-imapd): %v", err)
	}
	dir, err := os.MkdirTemp("", "reply-dovecot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Dovecot's own users read the configuration and the password file.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	uid, gid := mailOwner(t)
	for _, d := range []string{"home", "run", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(dir, "home"), uid, gid); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/passwd
}
userdb {
  driver = static
  args = uid=%[2]d gid=%[3]d home=%[1]s/home/%%u
}
mail_location = maildir:~/Maildir
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[4]d
  }
  inet_listener imaps {
    port = 0
  }
  chroot =
}
service anvil {
  chroot =
}
`, dir, uid, gid, port)
	if err := os.WriteFile(filepath.Join(dir, "dovecot.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(user+":{PLAIN}"+password+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No pipes: the daemon keeps inherited descriptors open, and a pipe
	// would make Run wait for it to exit.
	if err := exec.Command(bin, "-c", filepath.Join(dir, "dovecot.conf")).Run(); err != nil {
		t.Fatalf("dovecot: %v (see %s/dovecot.log)", err, dir)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "run", "master.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Signal(syscall.SIGTERM)
					time.Sleep(200 * time.Millisecond)
				}
			}
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("dovecot does not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mailOwner is the system user Dovecot stores mail as: its own.
func mailOwner(t testing.TB) (int, int) {
	u, err := user.Lookup("dovecot")
	if err != nil {
		t.Fatalf("no dovecot user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

// Sign signs raw with DKIM for domain and selector (relaxed/relaxed, over
// From, To, Subject, Message-ID and Date), as a mail provider would.
func Sign(t testing.TB, raw []byte, domain, selector string, key crypto.Signer) []byte {
	t.Helper()
	return SignHeaders(t, raw, domain, selector, key, "From", "To", "Subject", "Message-ID", "Date")
}

// SignHeaders is Sign over the header fields named (DKIM requires From).
func SignHeaders(t testing.TB, raw []byte, domain, selector string, key crypto.Signer, headers ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	opts := &dkim.SignOptions{Domain: domain, Selector: selector, Signer: key,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed,
		HeaderKeys: headers}
	if err := dkim.Sign(&out, bytes.NewReader(raw), opts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// KeyRecord is the DKIM TXT record publishing pub (RSA or Ed25519).
func KeyRecord(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	if ed, ok := pub.(ed25519.PublicKey); ok {
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(ed)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
}
