package room

import (
	"net/mail"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Binding constants (participant-binding/v1).
const (
	Assurance          = "recipient-email-proof-possession"
	BindingSchemaFmt   = "%s/schemas/participant-binding/v1"
	MaxRuntimeEndpoint = 2048
	MaxInbox           = 320
)

// Binding is the participant-binding/v1 object hashed into bindingDigest. It
// has no timestamps, so replaying an identical claim hashes the same.
type Binding struct {
	Schema          string  `json:"schema"`
	Version         int     `json:"version"`
	AgreementID     string  `json:"agreement_id"`
	InvitationID    string  `json:"invitation_id"`
	ParticipantID   string  `json:"participant_id"`
	Inbox           string  `json:"inbox"`
	RuntimeEndpoint *string `json:"runtime_endpoint"`
	Assurance       string  `json:"assurance"`
	Revision        int     `json:"revision"`
	RevisionDigest  string  `json:"revision_digest"`
}

// NormalizeInbox trims and lower-cases an address and checks that it is a
// single bare address (no display name, no angle brackets) that the mail
// transports can deliver: ASCII only, since they do not negotiate
// SMTPUTF8 (an internationalized domain is accepted in its ASCII
// "xn--" form).
func NormalizeInbox(field, s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", invalid(field, "is required")
	}
	if len(s) > MaxInbox {
		return "", invalid(field, "must be at most %d bytes", MaxInbox)
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return "", invalid(field, `must be an ASCII address: invitations are sent without SMTPUTF8, so a non-ASCII mailbox cannot be delivered (write an internationalized domain in its "xn--" form)`)
		}
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || !strings.Contains(s, "@") {
		return "", invalid(field, "must be a bare email address such as agent@example.com")
	}
	return s, nil
}

// ValidateRuntimeEndpoint checks an optional runtime endpoint: an absolute
// https:// URL without userinfo, at most 2,048 characters. It is recorded,
// never fetched.
func ValidateRuntimeEndpoint(s string) error {
	if len(s) > MaxRuntimeEndpoint {
		return invalid("runtimeEndpoint", "must be at most %d characters", MaxRuntimeEndpoint)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return invalid("runtimeEndpoint", "must be an absolute https:// URL")
	}
	if u.User != nil {
		return invalid("runtimeEndpoint", "must not contain userinfo")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return invalid("runtimeEndpoint", "must not contain whitespace")
	}
	return nil
}
