package mail

// The SMTP transport's failures: temporary and permanent replies, a dropped
// or refused connection, a context deadline, an invalid message.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

func TestSMTPTemporaryReplyThenSuccess(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{"RCPT", "DATA"} {
		t.Run(stage, func(t *testing.T) {
			t.Parallel()
			busy := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"}
			s := &sink{}
			if stage == "RCPT" {
				s.rcptErrs = []error{busy}
			} else {
				s.dataErrs = []error{busy}
			}
			tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
			_, err := tr.Send(sendCtx(t), testMessage())
			if err == nil || IsPermanent(err) {
				t.Fatalf("first Send = %v, want a temporary error", err)
			}
			if !strings.Contains(err.Error(), "451 4.3.0 Try again later") {
				t.Errorf("error %q lacks the reply", err)
			}
			var se *smtp.SMTPError
			if !errors.As(err, &se) || se.Code != 451 {
				t.Errorf("error does not wrap the *smtp.SMTPError: %v", err)
			}
			if _, err := tr.Send(sendCtx(t), testMessage()); err != nil {
				t.Fatalf("second Send: %v", err)
			}
			if n := len(s.messages()); n != 1 {
				t.Errorf("server holds %d messages, want 1", n)
			}
		})
	}
}

func TestSMTPPermanentReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stage string
		err   *smtp.SMTPError
		reply string
	}{
		{"RCPT", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"}, "550 5.1.1 No such user"},
		{"DATA", &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Message rejected"}, "554 5.6.0 Message rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			t.Parallel()
			s := &sink{}
			if tt.stage == "RCPT" {
				s.rcptErrs = []error{tt.err}
			} else {
				s.dataErrs = []error{tt.err}
			}
			tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
			_, err := tr.Send(sendCtx(t), testMessage())
			if !IsPermanent(err) {
				t.Fatalf("Send = %v, want a permanent error", err)
			}
			var pe *PermanentError
			errors.As(err, &pe)
			if pe.Reply != tt.reply {
				t.Errorf("Reply = %q, want %q", pe.Reply, tt.reply)
			}
			if !strings.Contains(err.Error(), tt.reply) {
				t.Errorf("error %q lacks the reply", err)
			}
		})
	}
}

func TestSMTPConnectionDroppedMidData(t *testing.T) {
	t.Parallel()
	s := &sink{dropData: true}
	tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
	m := testMessage()
	m.Body = strings.Repeat("a long body line that keeps the client writing\n", 20000)
	_, err := tr.Send(sendCtx(t), m)
	if err == nil || IsPermanent(err) {
		t.Fatalf("Send = %v, want a temporary error", err)
	}
	t.Logf("error: %v", err)
}

func TestSMTPConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tr := openSMTP(t, "smtp://"+addr, Options{})
	if _, err := tr.Send(sendCtx(t), testMessage()); err == nil || IsPermanent(err) {
		t.Fatalf("Send = %v, want a temporary error", err)
	}
}

func TestSMTPRespectsContextDeadline(t *testing.T) {
	t.Parallel()
	// A server that accepts and never greets.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	for _, url := range []string{"smtp://" + l.Addr().String(), "smtps://" + l.Addr().String()} {
		tr := openSMTP(t, url, Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err = tr.Send(ctx, testMessage())
		cancel()
		if err == nil || IsPermanent(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: Send = %v, want a temporary deadline error", url, err)
		}
		t.Logf("%s: error: %v", url, err)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: Send took %v despite a 200ms deadline", url, d)
		}
	}
}

func TestSMTPInvalidMessageIsPermanent(t *testing.T) {
	t.Parallel()
	s := &sink{}
	tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
	m := testMessage()
	m.Subject = "x\r\nBcc: victim@example.org"
	if _, err := tr.Send(sendCtx(t), m); !IsPermanent(err) || !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("Send = %v, want a permanent ErrInvalidMessage", err)
	}
	if n := len(s.messages()); n != 0 {
		t.Errorf("server received %d messages", n)
	}
}
