package mail

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	tests := []struct {
		url  string
		opts Options
		// either want (a transport description) or wantErr (a substring)
		want    string
		wantErr string
	}{
		{url: "maildir://" + base + "/a", want: "maildir " + base + "/a"},
		{url: "MAILDIR://" + base + "/b/", want: "maildir " + base + "/b"},
		{url: "maildir://localhost" + base + "/c", want: "maildir " + base + "/c"},
		{url: "maildir:relative/path", wantErr: "maildir path must be absolute"},
		{url: "maildir://", wantErr: "maildir path missing"},
		{url: "maildir://mailhost/var/mail", wantErr: `maildir host must be empty`},
		{url: "maildir://u:p@/x", wantErr: "maildir takes no user or password"},
		{url: "smtp://mail.example.org", want: "smtp mail.example.org:587 starttls user= helo=localhost"},
		{url: "smtp://mail.example.org:2525", want: "smtp mail.example.org:2525 starttls user= helo=localhost"},
		{url: "smtps://mail.example.org", want: "smtp mail.example.org:465 tls user= helo=localhost"},
		{url: "SMTPS://mail.example.org:1465/", want: "smtp mail.example.org:1465 tls user= helo=localhost"},
		{url: "smtp://bob:s3cret@mail.example.org", want: "smtp mail.example.org:587 starttls user=bob pass=s3cret helo=localhost"},
		{url: "smtp://bob%40example.org:p%3Ass@[::1]:25", want: "smtp [::1]:25 starttls user=bob@example.org pass=p:ss helo=localhost"},
		{url: "smtp://bob:old@mail.example.org", opts: Options{Password: "new", HeloName: "consensus.example.org"},
			want: "smtp mail.example.org:587 starttls user=bob pass=new helo=consensus.example.org"},
		{url: "smtp://bob@mail.example.org", opts: Options{Password: "fromfile"}, want: "smtp mail.example.org:587 starttls user=bob pass=fromfile helo=localhost"},
		{url: "smtp://bob@mail.example.org", wantErr: `user "bob" has no password`},
		{url: "smtp://mail.example.org", opts: Options{Password: "x"}, wantErr: "password is set but the URL names no user"},
		{url: "smtp://", wantErr: "smtp URL needs a host"},
		{url: "smtp:mail.example.org", wantErr: "smtp URL needs a host"},
		{url: "smtps://:465", wantErr: "smtps URL needs a host"},
		{url: "smtp://mail.example.org:0", wantErr: `invalid port "0"`},
		{url: "smtp://mail.example.org:70000", wantErr: `invalid port "70000"`},
		{url: "smtp://mail.example.org:", wantErr: "empty port"},
		{url: "smtp://mail.example.org:abc", wantErr: "invalid port"},
		{url: "smtp://mail.example.org/inbox", wantErr: `takes no path`},
		{url: "smtp://mail.example.org?tls=off", wantErr: "query parameters not supported"},
		{url: "smtp://mail.example.org#x", wantErr: "fragment not allowed"},
		{url: "smtp://mail.example.org", opts: Options{HeloName: "a b"}, wantErr: "contains white space"},
		{url: "ftp://files.example.org", wantErr: `mail url: unsupported scheme "ftp" (want maildir, smtp or smtps)`},
		{url: "/var/mail", wantErr: "missing scheme"},
		{url: "", wantErr: "mail url: empty"},
		{url: "://x", wantErr: "missing scheme"},
		{url: "smtp://bob:hunter2@bad host", wantErr: "invalid character in host name"},
		{url: "smtp://bob:hunter2", wantErr: "invalid port"},
		{url: "smtp://bob:%zz@mail.example.org", wantErr: "invalid percent-encoding"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			tr, err := Open(tt.url, tt.opts)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Open succeeded: %s", describe(tr))
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "mail url: ") && !strings.HasPrefix(err.Error(), "mail: maildir") {
					t.Errorf("error %q does not start with \"mail url: \"", err)
				}
				for _, secret := range []string{"hunter2", "%zz"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q reveals the password", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer tr.Close()
			if got := describe(tr); got != tt.want {
				t.Errorf("transport = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenDefaults(t *testing.T) {
	t.Parallel()
	tr, err := Open("smtp://mail.example.org", Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := tr.(*smtpTransport)
	if st.dialTimeout != 30*time.Second {
		t.Errorf("dial timeout = %v", st.dialTimeout)
	}
	if cfg := st.tlsConfigFor(); cfg.ServerName != "mail.example.org" {
		t.Errorf("TLS server name = %q", cfg.ServerName)
	}
}

func describe(tr Transport) string {
	switch tr := tr.(type) {
	case *Maildir:
		return "maildir " + filepath.ToSlash(tr.dir)
	case *smtpTransport:
		mode := "starttls"
		if tr.implicitTLS {
			mode = "tls"
		}
		s := fmt.Sprintf("smtp %s %s user=%s", tr.addr, mode, tr.user)
		if tr.password != "" {
			s += " pass=" + tr.password
		}
		return s + " helo=" + tr.helo
	default:
		return fmt.Sprintf("%T", tr)
	}
}

func TestIsPermanent(t *testing.T) {
	t.Parallel()
	perm := &PermanentError{Reply: "550 5.1.1 No such user", Err: errors.New("smtp: RCPT TO: 550 5.1.1 No such user")}
	if !IsPermanent(perm) || !IsPermanent(fmt.Errorf("outbox: %w", perm)) {
		t.Error("a wrapped PermanentError is not permanent")
	}
	if IsPermanent(errors.New("dial tcp: connection refused")) || IsPermanent(nil) {
		t.Error("a plain error is permanent")
	}
	if got := (&PermanentError{Reply: "554 no"}).Error(); !strings.Contains(got, "554 no") {
		t.Errorf("Error() = %q", got)
	}
	// The reply is what an operator reads: it leads, and a cause that does
	// not repeat it follows.
	if got := (&PermanentError{Reply: "sealed body cannot be opened", Err: errors.New("cipher: message authentication failed")}).Error(); got != "sealed body cannot be opened: cipher: message authentication failed" {
		t.Errorf("Error() = %q", got)
	}
	if got := perm.Error(); got != "smtp: RCPT TO: 550 5.1.1 No such user" {
		t.Errorf("Error() = %q", got)
	}
}
