// Package mailsink is a real in-process mail system for tests and the demo:
// an SMTP server (go-smtp) that records every message it accepts and files
// it into the recipient's INBOX on an in-memory IMAP server
// (go-imap/v2 imapserver + imapmemserver). Both listen on loopback in
// plaintext. Faults can be injected: scripted SMTP replies to DATA, a
// connection dropped in the middle of DATA, a delay before each reply.
//
// It is not a mail server for production: it has no TLS, no relay rules and
// keeps everything in memory.
package mailsink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-smtp"
)

// Message is one message the SMTP server accepted.
type Message struct {
	From, To  string
	MessageID string // without angle brackets; "" when the header is missing
	Data      []byte
}

// Server is the running SMTP and IMAP pair.
type Server struct {
	// SMTPAddr and IMAPAddr are the loopback host:port of each server.
	SMTPAddr, IMAPAddr string

	smtp *smtp.Server
	imap *imapserver.Server
	mem  *imapmemserver.Server

	mu       sync.Mutex
	msgs     []Message
	users    map[string]*imapmemserver.User
	faults   []error // replies to the next DATA commands, one each; nil accepts
	drops    int     // how many next DATA commands drop the connection midway
	delay    time.Duration
	attempts int
}

// Start listens on 127.0.0.1 with two free ports.
func Start() (*Server, error) {
	s := &Server{mem: imapmemserver.New(), users: map[string]*imapmemserver.User{}}
	s.smtp = smtp.NewServer(backend{s})
	s.smtp.Domain = "mailsink.localhost"
	s.smtp.ErrorLog = log.New(io.Discard, "", 0)
	s.smtp.ReadTimeout = time.Minute
	s.smtp.WriteTimeout = time.Minute
	s.smtp.MaxMessageBytes = 1 << 20
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mailsink: smtp listen: %w", err)
	}
	s.imap = imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return s.mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIdle: {}},
		InsecureAuth: true, // loopback only
	})
	il, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sl.Close()
		return nil, fmt.Errorf("mailsink: imap listen: %w", err)
	}
	s.SMTPAddr, s.IMAPAddr = sl.Addr().String(), il.Addr().String()
	go func() { _ = s.smtp.Serve(sl) }()
	go func() { _ = s.imap.Serve(il) }()
	return s, nil
}

// Close stops both servers.
func (s *Server) Close() error {
	return errors.Join(s.smtp.Close(), s.imap.Close())
}

// SMTPURL is the CONSENSUS_MAIL_URL that reaches this server.
func (s *Server) SMTPURL() string { return "smtp://" + s.SMTPAddr }

// AddMailbox creates an IMAP user whose login is the address and gives it
// an INBOX; mail to that address is filed there.
func (s *Server) AddMailbox(address, password string) error {
	address = strings.ToLower(strings.TrimSpace(address))
	u := imapmemserver.NewUser(address, password)
	if err := u.Create("INBOX", nil); err != nil {
		return fmt.Errorf("mailsink: create INBOX: %w", err)
	}
	s.mu.Lock()
	s.users[address] = u
	s.mu.Unlock()
	s.mem.AddUser(u)
	return nil
}

// Messages returns a copy of everything accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Attempts is how many DATA commands began, accepted or not.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// FailNext makes the next DATA commands reply with these errors, one each
// (a nil entry accepts). Use *smtp.SMTPError for a specific reply code.
func (s *Server) FailNext(errs ...error) {
	s.mu.Lock()
	s.faults = append(s.faults, errs...)
	s.mu.Unlock()
}

// DropNext makes the next n DATA commands close the connection after
// reading part of the message, without any reply.
func (s *Server) DropNext(n int) {
	s.mu.Lock()
	s.drops += n
	s.mu.Unlock()
}

// SetDelay makes every DATA wait d before it replies (a slow server).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// Temporary and Permanent are ready-made SMTP replies for FailNext.
var (
	Temporary = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	Permanent = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
)

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtp.Conn
	from string
	to   []string
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	s := ss.s
	s.mu.Lock()
	s.attempts++
	drop := s.drops > 0
	if drop {
		s.drops--
	}
	var fault error
	if !drop && len(s.faults) > 0 {
		fault, s.faults = s.faults[0], s.faults[1:]
	}
	delay := s.delay
	s.mu.Unlock()

	if drop {
		_, _ = io.CopyN(io.Discard, r, 64)
		ss.conn.Conn().Close()
		return errors.New("mailsink: connection dropped on purpose")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if fault != nil {
		return fault
	}
	id := ""
	if m, err := netmail.ReadMessage(bytes.NewReader(data)); err == nil {
		id = strings.Trim(strings.TrimSpace(m.Header.Get("Message-Id")), "<>")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, to := range ss.to {
		s.msgs = append(s.msgs, Message{From: ss.from, To: to, MessageID: id, Data: data})
		if u := s.users[strings.ToLower(to)]; u != nil {
			if _, err := u.Append("INBOX", literal{bytes.NewReader(data), int64(len(data))}, &imap.AppendOptions{}); err != nil {
				return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "mailbox unavailable"}
			}
		}
	}
	return nil
}

func (ss *session) Reset()        { ss.from, ss.to = "", nil }
func (ss *session) Logout() error { return nil }

// literal is an imap.LiteralReader over bytes.
type literal struct {
	*bytes.Reader
	n int64
}

func (l literal) Size() int64 { return l.n }
