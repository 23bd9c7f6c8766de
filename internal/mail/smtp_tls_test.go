package mail

// The SMTP transport's sending and its security: plaintext only on
// loopback, STARTTLS, implicit TLS, and a failed login that keeps the
// password secret.

import (
	"bytes"
	"strings"
	"testing"
)

func TestSMTPSendPlaintextLoopback(t *testing.T) {
	t.Parallel()
	s := &sink{}
	port := startSink(t, s, plainServer)
	tr := openSMTP(t, "smtp://127.0.0.1:"+port, Options{HeloName: "consensus.test"})

	m := testMessage()
	m.Body = "Line one\n.starts with a dot\n..two dots\n.\nGrüße\n"
	rc, err := tr.Send(sendCtx(t), m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if rc.Reply != "250 2.0.0 OK: queued" { // go-smtp's reply to the final dot
		t.Errorf("Reply = %q, want the server's reply to DATA", rc.Reply)
	}
	msgs := s.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages", len(msgs))
	}
	want, _ := Compose(m)
	if got := msgs[0]; got.from != "noreply@consensus.md" || got.to != "agent@example.org" || got.tls {
		t.Errorf("envelope = %+v", got)
	}
	if !bytes.Equal(msgs[0].data, want) {
		t.Errorf("data differs:\n got %q\nwant %q", msgs[0].data, want)
	}
}

func TestSMTPStartTLSWhenOfferedOnLoopback(t *testing.T) {
	t.Parallel()
	s := &sink{wantUser: "bob", wantPass: "correct horse"}
	port := startSink(t, s, startTLSServer)
	tr := openSMTP(t, "smtp://bob@localhost:"+port, Options{Password: "correct horse", TLSConfig: clientTLS()})
	if _, err := tr.Send(sendCtx(t), testMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := s.messages()
	if len(msgs) != 1 || !msgs[0].tls {
		t.Fatalf("want one message over TLS, got %+v", msgs)
	}
	if msgs[0].user != "bob" || msgs[0].pass != "correct horse" {
		t.Errorf("credentials received: %q / %q", msgs[0].user, msgs[0].pass)
	}
}

func TestSMTPStartTLSRequiredForRemoteHost(t *testing.T) {
	t.Parallel()
	// The transport believes it talks to mail.example.org; only the dial
	// address points at the local sink.
	tlsSink := &sink{wantUser: "bob", wantPass: "pw-remote"}
	tr := openSMTP(t, "smtp://bob@mail.example.org", Options{Password: "pw-remote", TLSConfig: clientTLS()})
	tr.addr = "127.0.0.1:" + startSink(t, tlsSink, startTLSServer)
	if _, err := tr.Send(sendCtx(t), testMessage()); err != nil {
		t.Fatalf("Send over STARTTLS: %v", err)
	}
	if msgs := tlsSink.messages(); len(msgs) != 1 || !msgs[0].tls || msgs[0].user != "bob" {
		t.Fatalf("received %+v", msgs)
	}

	plain := &sink{}
	tr2 := openSMTP(t, "smtp://bob@mail.example.org", Options{Password: "pw-remote"})
	tr2.addr = "127.0.0.1:" + startSink(t, plain, plainServer)
	_, err := tr2.Send(sendCtx(t), testMessage())
	if err == nil || !strings.Contains(err.Error(), "does not offer STARTTLS") {
		t.Fatalf("Send without STARTTLS = %v, want a refusal", err)
	}
	if IsPermanent(err) {
		t.Errorf("refusal is permanent; a server setting can fix it: %v", err)
	}
	if strings.Contains(err.Error(), "pw-remote") {
		t.Errorf("error reveals the password: %v", err)
	}
	if n := len(plain.messages()); n != 0 {
		t.Errorf("plaintext server received %d messages", n)
	}
}

func TestPlaintextPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host    string
		offered bool
		allowed bool
	}{
		{"127.0.0.1", false, true},
		{"127.8.9.10", false, true},
		{"::1", false, true},
		{"localhost", false, true},
		{"LOCALHOST.", false, true},
		{"mail.localhost", false, true},
		{"mail.example.org", false, false},
		{"10.0.0.1", false, false},
		{"::ffff:8.8.8.8", false, false},
		{"localhost.example.org", false, false},
		{"mail.example.org", true, true},
	}
	for _, tt := range tests {
		err := plaintextPolicy(tt.host, tt.offered)
		if (err == nil) != tt.allowed {
			t.Errorf("plaintextPolicy(%q, %v) = %v, want allowed=%v", tt.host, tt.offered, err, tt.allowed)
		}
	}
}

func TestSMTPSImplicitTLS(t *testing.T) {
	t.Parallel()
	s := &sink{wantUser: "alice", wantPass: "tls-only-pw"}
	port := startSink(t, s, implicitServer)
	tr := openSMTP(t, "smtps://alice:tls-only-pw@127.0.0.1:"+port, Options{TLSConfig: clientTLS()})
	rc, err := tr.Send(sendCtx(t), testMessage())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if !strings.HasPrefix(rc.Reply, "250") {
		t.Errorf("Reply = %q", rc.Reply)
	}
	if msgs := s.messages(); len(msgs) != 1 || !msgs[0].tls || msgs[0].pass != "tls-only-pw" {
		t.Fatalf("received %+v", msgs)
	}

	// Without the test CA the self-signed certificate must be refused.
	untrusted := openSMTP(t, "smtps://127.0.0.1:"+port, Options{})
	if _, err := untrusted.Send(sendCtx(t), testMessage()); err == nil || IsPermanent(err) {
		t.Errorf("Send with an untrusted certificate = %v, want a temporary error", err)
	}
}

func TestSMTPAuthFailureKeepsPasswordSecret(t *testing.T) {
	t.Parallel()
	s := &sink{wantUser: "bob", wantPass: "right"}
	port := startSink(t, s, startTLSServer)
	tr := openSMTP(t, "smtp://bob@127.0.0.1:"+port, Options{Password: "wrong-Pa55word", TLSConfig: clientTLS()})
	_, err := tr.Send(sendCtx(t), testMessage())
	if err == nil {
		t.Fatal("Send succeeded with a wrong password")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "535") {
		t.Errorf("error %q lacks the server reply", err)
	}
	if IsPermanent(err) {
		t.Errorf("AUTH failure is permanent; fixing the setting fixes every message: %v", err)
	}
	for _, form := range []string{"wrong-Pa55word", "d3JvbmctUGE1NXdvcmQ"} {
		if strings.Contains(err.Error(), form) {
			t.Errorf("error %q reveals the password", err)
		}
	}
}
