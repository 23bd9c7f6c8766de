package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"time"
)

// Agreement is what the operator locks through POST
// /api/v1/admin/agreements.
type Agreement struct {
	Title, Objective string
	Rules            []string
	Deadline         time.Time
	Participants     []Participant
}

// Participant is one invitee of an Agreement.
type Participant struct {
	DisplayName string `json:"displayName"`
	Kind        string `json:"kind"`
	Email       string `json:"email"`
	Required    bool   `json:"required"`
}

// Created is the operator API's answer to a created agreement, in the
// order the participants were given.
type Created struct {
	AgreementID    string `json:"agreementId"`
	RevisionDigest string `json:"revisionDigest"`
	Participants   []struct {
		ParticipantID string `json:"participantId"`
		InvitationID  string `json:"invitationId"`
		Email         string `json:"email"`
		Kind          string `json:"kind"`
	} `json:"participants"`
}

// CreateAgreement locks a through the operator API, with Client, so the
// exchange is checked against the contract. It fails unless the answer is
// 201 Created.
func (s *Server) CreateAgreement(ctx context.Context, a Agreement) (*Created, error) {
	rules := a.Rules
	if rules == nil {
		rules = []string{}
	}
	body, err := json.Marshal(map[string]any{
		"title": a.Title, "objective": a.Objective, "rules": rules,
		"deadline": a.Deadline.UTC().Format(time.RFC3339), "participants": a.Participants,
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/admin/agreements", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.OperatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("create agreement: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("create agreement: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("create agreement: HTTP %d: %s", resp.StatusCode, answer)
	}
	var c Created
	if err := json.Unmarshal(answer, &c); err != nil {
		return nil, fmt.Errorf("create agreement: %w", err)
	}
	return &c, nil
}

// WaitForMail waits until n messages were delivered (to the sink, or into
// the Maildir's new/ and cur/), or ctx ends.
func (s *Server) WaitForMail(ctx context.Context, n int) error {
	for {
		got := s.delivered()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d messages were delivered: %w", got, n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) delivered() int {
	if s.Sink != nil {
		return len(s.Sink.Messages())
	}
	fresh, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
	seen, _ := filepath.Glob(filepath.Join(s.Maildir, "cur", "*"))
	return len(fresh) + len(seen)
}

// IMAPURL is the `consensus agent watch --imap` value that reads the INBOX
// of address on the sink (MailSMTP); the password comes from
// CONSENSUS_IMAP_PASSWORD.
func (s *Server) IMAPURL(address string) string {
	u := url.URL{Scheme: "imap+plain", User: url.User(address), Host: s.Sink.IMAPAddr, Path: "/INBOX"}
	return u.String()
}
