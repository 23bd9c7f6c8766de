package httpapi

import (
	"slices"

	"github.com/consensus-md/consensus/internal/room"
)

// ReplyCapability describes deciding by replying to the invitation email,
// offered when the deployment reads a reply mailbox.
type ReplyCapability struct {
	ReplyTo   string   `json:"replyTo"`
	FirstLine string   `json:"firstLine"`
	Otherwise string   `json:"otherwise"`
	Accepted  string   `json:"accepted"`
	Ignored   []string `json:"ignored"`
	Assurance string   `json:"assurance"`
	Evidence  string   `json:"evidence"`
}

// withReply fills offered.reply and drops it from notOffered when the
// venue reads replies.
func (s *Server) withReply(c Capabilities) Capabilities {
	if s.venue == nil || s.venue.ReplyAddress == "" {
		return c
	}
	c.Offered.Reply = &ReplyCapability{
		ReplyTo:   "the Reply-To of the invitation email: the reply address with a tag naming the invitation (a keyed MAC, never the secret or the proof)",
		FirstLine: "AGREE, DISAGREE or ABSTAIN followed by the current revision digest (all 64 hex characters or the first 12) decides",
		Otherwise: "any other new text (above the quoted email, at most 4000 characters) is posted as a comment; a digest of an older revision records nothing",
		Accepted:  "only from the invited address, with a DKIM signature that verifies and whose d= domain is the address's domain or a parent or child of it; each reply acted on gets one answer email",
		Ignored: []string{"any message that is not accepted, unanswered", "a message over 1 MiB (not read, so not authenticated)",
			"auto-replies (Auto-Submitted other than no, Precedence bulk, list or junk, an empty return path)",
			"a reply seen before: the same Message-ID, the same DKIM signature (b=), or the same signed body hash (bh=) to the same invitation",
			"a revoked participant's reply"},
		Assurance: room.AssuranceDKIMReply + " (the first verified reply claims an unclaimed slot; countsAsSignature false)",
		Evidence:  "the event's evidence member, carried by the signed record and re-checked offline by both record verifiers",
	}
	c.NotOffered = slices.DeleteFunc(c.NotOffered, func(s string) bool { return s == "email-reply-participation" })
	return c
}
