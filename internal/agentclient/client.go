package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
)

// Exchanged is the exchange response (the session token is private).
type Exchanged struct {
	SessionToken     string `json:"sessionToken"`
	SessionExpiresAt string `json:"sessionExpiresAt"`
	InvitationID     string `json:"invitationId"`
	AgreementID      string `json:"agreementId"`
	RevisionNumber   int    `json:"revisionNumber"`
	RevisionDigest   string `json:"revisionDigest"`
	MarkdownDigest   string `json:"markdownDigest"`
	TermsDigest      string `json:"termsDigest"`
	// Revisions is the history of locked revisions, oldest first.
	Revisions         []RevisionSummary `json:"revisions"`
	CanonicalRevision json.RawMessage   `json:"canonicalRevision"`
	Markdown          string            `json:"markdown"`
	Participant       struct {
		ParticipantID string `json:"participantId"`
		DisplayName   string `json:"displayName"`
		Kind          string `json:"kind"`
	} `json:"participant"`
	Actions struct {
		Claim, Room, Events, Artifact string
	} `json:"actions"`
}

// Claimed is the claim response (the participant token is private).
type Claimed struct {
	ParticipantToken  string `json:"participantToken"`
	ParticipantID     string `json:"participantId"`
	BindingDigest     string `json:"bindingDigest"`
	Assurance         string `json:"assurance"`
	CountsAsSignature bool   `json:"countsAsSignature"`
}

// Room is the part of the room document the runtime reads; Raw keeps the
// whole document as the server sent it.
type Room struct {
	AgreementID  string `json:"agreementId"`
	InvitationID string `json:"invitationId"`
	Revision     struct {
		Number            int             `json:"number"`
		RevisionDigest    string          `json:"revisionDigest"`
		MarkdownDigest    string          `json:"markdownDigest"`
		TermsDigest       string          `json:"termsDigest"`
		CanonicalRevision json.RawMessage `json:"canonicalRevision"`
		Markdown          string          `json:"markdown"`
	} `json:"revision"`
	// Revisions is the history of locked revisions, oldest first.
	Revisions []RevisionSummary `json:"revisions"`
	You       struct {
		ParticipantID   string  `json:"participantId"`
		Decision        *string `json:"decision"`
		EventsRemaining int     `json:"eventsRemaining"`
	} `json:"you"`
	Outcome struct {
		Status string `json:"status"`
	} `json:"outcome"`
	Artifact *struct {
		URL    string `json:"url"`
		SHA256 string `json:"sha256"`
		Bytes  int    `json:"bytes"`
	} `json:"artifact"`
	// ChainHead is the hash of the last event.
	ChainHead string          `json:"chainHead"`
	Raw       json.RawMessage `json:"-"`
	ETag      string          `json:"-"`
}

// RevisionSummary is one entry of the room's history of revisions.
type RevisionSummary struct {
	Number         int    `json:"number"`
	RevisionDigest string `json:"revisionDigest"`
	TermsDigest    string `json:"termsDigest"`
}

// Event is a stored room event as the events route returns it.
type Event struct {
	ID            string `json:"id"`
	Seq           int64  `json:"seq"`
	ParticipantID string `json:"participantId"`
	Action        string `json:"action"`
	Body          string `json:"body"`
	Revision      int    `json:"revision"`
	CreatedAt     string `json:"createdAt"`
	Hash          string `json:"hash"`
}

// Posted is the events response; Replayed is true for a 200 (the server
// already had this key and command).
type Posted struct {
	Event   Event `json:"event"`
	Outcome struct {
		Status string `json:"status"`
	} `json:"outcome"`
	Replayed bool `json:"-"`
}

// APIError is a problem+json answer.
type APIError struct {
	Status int
	Code   string
	Detail string
}

// Error gives the status, the problem code and its detail.
func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Detail)
}

// definitive reports whether err is an answer that a retry with the same
// request cannot change (a 4xx other than 408 and 429).
func definitive(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 408 && ae.Status != 429
}

// Client speaks the agent API. It never follows redirects, so a credential
// can only go to the pinned URL it was meant for.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client with a 30-second timeout and no redirects.
func NewClient() *Client {
	return &Client{HTTP: &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

const maxResponse = 4 << 20

// do sends one request. auth is the full Authorization value or "".
func (c *Client) do(ctx context.Context, method, url, auth string, header map[string]string, body any) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// url.Error quotes the URL, which never carries a credential here.
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 300 {
		return resp, b, problemError(resp.StatusCode, b)
	}
	return resp, b, nil
}

// problemError is the *APIError of a refusal with its problem body.
func problemError(status int, body []byte) *APIError {
	var p struct{ Code, Detail string }
	_ = json.Unmarshal(body, &p)
	return &APIError{Status: status, Code: p.Code, Detail: p.Detail}
}

// doJSON is do for a JSON answer: it decodes a successful one into out and
// names the call (what) in every error.
func (c *Client) doJSON(ctx context.Context, what, method, url, auth string, header map[string]string, body, out any) (*http.Response, []byte, error) {
	resp, b, err := c.do(ctx, method, url, auth, header, body)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("agent: %s: %w", what, err)
	}
	return resp, b, nil
}

// Exchange trades the fragment secret (sent in the body only) for a session.
func (c *Client) Exchange(ctx context.Context, exchangeURL, secret string) (*Exchanged, error) {
	var x Exchanged
	if _, _, err := c.doJSON(ctx, "exchange", http.MethodPost, exchangeURL, "", nil, map[string]string{"secret": secret}, &x); err != nil {
		return nil, err
	}
	return &x, nil
}

// ClaimRequest is the claim body; PublicKey and KeyProof bind a key
// (participant-binding/v2) and are omitted otherwise.
type ClaimRequest struct {
	EmailProof      string   `json:"emailProof"`
	Inbox           string   `json:"inbox"`
	RuntimeEndpoint string   `json:"runtimeEndpoint,omitempty"`
	PublicKey       *jwk.Key `json:"publicKey,omitempty"`
	KeyProof        string   `json:"keyProof,omitempty"`
}

// Claim binds the slot with the email proof and inbox (and a key).
func (c *Client) Claim(ctx context.Context, claimURL, session string, body ClaimRequest) (*Claimed, error) {
	var cl Claimed
	if _, _, err := c.doJSON(ctx, "claim", http.MethodPost, claimURL, "Consensus-Session "+session, nil, body, &cl); err != nil {
		return nil, err
	}
	return &cl, nil
}

// Room reads the room.
func (c *Client) Room(ctx context.Context, roomURL, token string) (*Room, error) {
	var r Room
	resp, b, err := c.doJSON(ctx, "room", http.MethodGet, roomURL, "Consensus-Participant "+token, nil, nil, &r)
	if err != nil {
		return nil, err
	}
	r.Raw, r.ETag = b, resp.Header.Get("ETag")
	return &r, nil
}

// Command is one room command as sent on the wire.
type Command struct {
	Action   string `json:"action"`
	Body     string `json:"body"`
	Revision int    `json:"revision"`
	Digest   string `json:"digest"`
}

// PostEvent sends cmd under key, with its Consensus-Signature when
// signature is not empty.
func (c *Client) PostEvent(ctx context.Context, eventsURL, token, key string, cmd Command, signature string) (*Posted, error) {
	var p Posted
	header := map[string]string{"Idempotency-Key": key}
	if signature != "" {
		header["Consensus-Signature"] = signature
	}
	resp, _, err := c.doJSON(ctx, "post "+cmd.Action, http.MethodPost, eventsURL, "Consensus-Participant "+token, header, cmd, &p)
	if err != nil {
		return nil, err
	}
	p.Replayed = resp.StatusCode == http.StatusOK
	return &p, nil
}

// ErrArtifactMismatch means the downloaded bytes do not match the digests
// the server stated; nothing is written.
var ErrArtifactMismatch = errors.New("agent: artifact bytes do not match Content-Digest / X-Consensus-SHA256")

// Artifact downloads CONSENSUS.md and verifies the exact bytes against both
// Content-Digest (RFC 9530 sha-256) and X-Consensus-SHA256. It returns the
// bytes and their hex SHA-256, or ErrArtifactMismatch (wrapped with which
// header disagreed) when either header is missing or wrong.
func (c *Client) Artifact(ctx context.Context, artifactURL, token string) ([]byte, string, error) {
	resp, b, err := c.do(ctx, http.MethodGet, artifactURL, "Consensus-Participant "+token, nil, nil)
	if err != nil {
		return nil, "", fmt.Errorf("agent: artifact: %w", err)
	}
	hex, b64 := canon.Digest(b), canon.DigestBase64(b)
	cd, ok := contentDigestSHA256(resp.Header.Get("Content-Digest"))
	if !ok || cd != b64 {
		return nil, "", fmt.Errorf("%w: Content-Digest", ErrArtifactMismatch)
	}
	if x := resp.Header.Get("X-Consensus-SHA256"); x != hex {
		return nil, "", fmt.Errorf("%w: X-Consensus-SHA256", ErrArtifactMismatch)
	}
	return b, hex, nil
}

// contentDigestSHA256 returns the base64 value of the sha-256 member of an
// RFC 9530 Content-Digest field ("sha-256=:…:, sha-512=:…:").
func contentDigestSHA256(field string) (string, bool) {
	for member := range strings.SplitSeq(field, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "sha-256") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) < 2 || value[0] != ':' || value[len(value)-1] != ':' {
			return "", false
		}
		return value[1 : len(value)-1], true
	}
	return "", false
}
