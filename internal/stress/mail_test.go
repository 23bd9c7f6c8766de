package stress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The exact marker lines of an invitation email.
const (
	beginMarker = "---BEGIN CONSENSUS INVITATION V1---"
	endMarker   = "---END CONSENSUS INVITATION V1---"
)

// invite is what the test takes from one invitation email, read the way
// an agent reads it: the JSON between the marker lines.
type invite struct {
	File          string
	InvitationID  string
	AgreementID   string
	ParticipantID string
	DisplayName   string
	Inbox         string
	Digest        string
	Secret        string
	Proof         string
}

// mailMsg is one parsed message of the Maildir.
type mailMsg struct {
	File string
	To   string
	// Notice: an outcome email or a reminder (SPEC §23), by its Message-ID;
	// it carries no invitation block.
	Notice bool
	Text   string // the decoded plain-text body, LF line endings
	Blocks int    // how many BEGIN marker lines it holds
	Inv    *invite
	Err    error
}

// mailbox indexes the Maildir the replicas deliver into.
type mailbox struct {
	dir  string
	mu   sync.Mutex
	seen map[string]*mailMsg
}

func newMailbox(dir string) *mailbox { return &mailbox{dir: dir, seen: map[string]*mailMsg{}} }

// scan parses every message not seen yet and returns all messages.
func (m *mailbox) scan() []*mailMsg {
	m.mu.Lock()
	defer m.mu.Unlock()
	files, _ := filepath.Glob(filepath.Join(m.dir, "new", "*"))
	for _, f := range files {
		if _, ok := m.seen[f]; ok {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		m.seen[f] = parseMail(f, raw)
	}
	out := make([]*mailMsg, 0, len(m.seen))
	for _, msg := range m.seen {
		out = append(out, msg)
	}
	return out
}

func parseMail(file string, raw []byte) *mailMsg {
	msg := &mailMsg{File: file}
	pm, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		msg.Err = err
		return msg
	}
	msg.To = pm.Header.Get("To")
	id := strings.TrimPrefix(pm.Header.Get("Message-Id"), "<")
	msg.Notice = strings.HasPrefix(id, "outcome-") || strings.HasPrefix(id, "reminder-")
	var body io.Reader = pm.Body
	if strings.EqualFold(strings.TrimSpace(pm.Header.Get("Content-Transfer-Encoding")), "quoted-printable") {
		body = quotedprintable.NewReader(pm.Body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		msg.Err = err
		return msg
	}
	msg.Text = strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(msg.Text, "\n")
	start := -1
	for i, l := range lines {
		switch l {
		case beginMarker:
			msg.Blocks++
			if start < 0 {
				start = i
			}
		case endMarker:
			if start >= 0 && msg.Inv == nil && msg.Err == nil {
				msg.Inv, msg.Err = parseEnvelope(strings.Join(lines[start+1:i], "\n"))
				if msg.Inv != nil {
					msg.Inv.File = file
				}
			}
		}
	}
	if msg.Inv == nil && msg.Err == nil {
		msg.Err = fmt.Errorf("no invitation block")
	}
	return msg
}

func parseEnvelope(js string) (*invite, error) {
	var env struct {
		InvitationID string `json:"invitation_id"`
		AgreementID  string `json:"agreement_id"`
		Participant  struct {
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
		} `json:"participant"`
		Inbox    string `json:"inbox"`
		Revision struct {
			Digest string `json:"digest"`
		} `json:"revision"`
		InviteURI  string `json:"invite_uri"`
		AgentClaim struct {
			EmailProof string `json:"email_proof"`
		} `json:"agent_claim"`
	}
	if err := json.Unmarshal([]byte(js), &env); err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	_, sec, ok := strings.Cut(env.InviteURI, "#secret=")
	if !ok || sec == "" || env.InvitationID == "" || env.AgentClaim.EmailProof == "" {
		return nil, fmt.Errorf("envelope without secret, id or proof")
	}
	return &invite{
		InvitationID: env.InvitationID, AgreementID: env.AgreementID, ParticipantID: env.Participant.ID,
		DisplayName: env.Participant.DisplayName, Inbox: env.Inbox, Digest: env.Revision.Digest,
		Secret: sec, Proof: env.AgentClaim.EmailProof,
	}, nil
}

// invites returns every invitation email of invitationID seen so far.
func (m *mailbox) invites(invitationID string) []invite {
	var out []invite
	for _, msg := range m.scan() {
		if msg.Inv != nil && msg.Inv.InvitationID == invitationID {
			out = append(out, *msg.Inv)
		}
	}
	return out
}

// find waits up to timeout for an invitation email of invitationID that
// accept takes (nil takes any).
func (m *mailbox) find(invitationID string, accept func(invite) bool, timeout time.Duration) (invite, bool) {
	var got invite
	ok := eventually(timeout, func() bool {
		for _, inv := range m.invites(invitationID) {
			if accept == nil || accept(inv) {
				got = inv
				return true
			}
		}
		return false
	})
	return got, ok
}

// wait is find with a 30 s bound that fails the test.
func (m *mailbox) wait(t testing.TB, invitationID string, accept func(invite) bool) invite {
	t.Helper()
	inv, ok := m.find(invitationID, accept, 30*time.Second)
	if !ok {
		t.Fatalf("no invitation email for %s within 30s", invitationID)
	}
	return inv
}
