package envelope

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"github.com/consensus-md/consensus/internal/agentroute"
)

// Names of the checks reported in CheckError.Check.
const (
	CheckBlock    = "block"    // no block, several blocks, or a malformed one
	CheckJSON     = "json"     // not one well-formed JSON object, or duplicate keys
	CheckSchema   = "schema"   // rejected by schemas/invitation-email/v1.json
	CheckOrigin   = "origin"   // guide checks 1 and 2: HTTPS and the pinned origin everywhere
	CheckUUID     = "uuid"     // guide check 3: one invitation UUID in envelope and paths
	CheckFragment = "fragment" // guide check 4: the fragment is exactly secret=<base64url>
	CheckProof    = "proof"    // guide check 5: the email proof is present and well formed
)

// CheckError reports which check refused an email. Detail names fields and
// the rule they broke; it never quotes envelope values, so it cannot leak the
// secret or the proof.
type CheckError struct {
	Check  string // one of the Check* constants
	Detail string
}

// Error names the check and the rule; it quotes no envelope value.
func (e *CheckError) Error() string {
	return "envelope: " + e.Check + " check failed: " + e.Detail
}

func checkErr(check, format string, args ...any) *CheckError {
	return &CheckError{Check: check, Detail: fmt.Sprintf(format, args...)}
}

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	secretRE = regexp.MustCompile(`^(csi_)?[A-Za-z0-9_-]{43}$`)
	proofRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`)
)

// IsInvitationID reports whether s is an invitation id as envelopes spell
// it: a canonical lower-case UUID. Such an id is also safe as a file name.
func IsInvitationID(s string) bool { return uuidRE.MatchString(s) }

// checkEnvelope applies the guide's five checks, in the guide's order, to a
// decoded envelope and builds the Invitation. URLs are compared as strings
// against the normalized origin: a URL passes only when it is byte for byte
// origin + the expected path, which leaves no room for user info, another
// port, a look-alike host, a query or a second fragment.
func checkEnvelope(env *Envelope, origin string) (*Invitation, error) {
	// Checks 1 and 2: one HTTPS (or allowed loopback HTTP) origin everywhere.
	inviteBase, fragment, hasFragment := strings.Cut(env.InviteURI, "#")
	inviteID, err := pathSegment("invite_uri", inviteBase, origin, InvitePath, "")
	if err != nil {
		return nil, err
	}
	exchangeID, err := pathSegment("agent_exchange.href", env.AgentExchange.Href, origin, agentroute.Prefix, agentroute.Exchange)
	if err != nil {
		return nil, err
	}
	claimID, err := pathSegment("agent_claim.href", env.AgentClaim.Href, origin, agentroute.Prefix, agentroute.Claim)
	if err != nil {
		return nil, err
	}
	if env.Docs != origin+DocsPath {
		return nil, originErr("docs", env.Docs, origin)
	}
	if env.AgentExchange.Method != "POST" || env.AgentClaim.Method != "POST" {
		return nil, checkErr(CheckSchema, "action method is not POST")
	}

	// Check 3: the same invitation UUID in the envelope and every path.
	if !IsInvitationID(env.InvitationID) {
		return nil, checkErr(CheckUUID, "invitation_id is not a lower-case UUID")
	}
	if inviteID != env.InvitationID {
		return nil, checkErr(CheckUUID, "invite_uri path UUID differs from invitation_id")
	}
	if exchangeID != env.InvitationID {
		return nil, checkErr(CheckUUID, "agent_exchange.href path UUID differs from invitation_id")
	}
	if claimID != env.InvitationID {
		return nil, checkErr(CheckUUID, "agent_claim.href path UUID differs from invitation_id")
	}

	// Check 4: the fragment is exactly secret=<base64url>, nothing else.
	if !hasFragment || fragment == "" {
		return nil, checkErr(CheckFragment, "invite_uri has no fragment")
	}
	name, secret, hasValue := strings.Cut(fragment, "=")
	if name != "secret" {
		return nil, checkErr(CheckFragment, "invite_uri fragment is not named secret")
	}
	if !hasValue || strings.ContainsAny(secret, "&;=#") {
		return nil, checkErr(CheckFragment, "invite_uri fragment must carry only the secret parameter")
	}
	if !secretRE.MatchString(secret) || !isBase64URL(strings.TrimPrefix(secret, "csi_"), 32) {
		return nil, checkErr(CheckFragment, "secret is not 32 bytes of unpadded base64url")
	}

	// Check 5: the proof came in this envelope and is well formed.
	proof := env.AgentClaim.EmailProof
	if proof == "" {
		return nil, checkErr(CheckProof, "agent_claim.email_proof is missing")
	}
	if !proofRE.MatchString(proof) || !isBase64URL(proof, 24) {
		return nil, checkErr(CheckProof, "agent_claim.email_proof is not 24 bytes of unpadded base64url")
	}

	return &Invitation{
		Envelope:       *env,
		InvitationID:   env.InvitationID,
		AgreementID:    env.AgreementID,
		Origin:         origin,
		ExchangeURL:    env.AgentExchange.Href,
		ClaimURL:       env.AgentClaim.Href,
		Secret:         secret,
		EmailProof:     proof,
		RevisionDigest: env.Revision.Digest,
		RevisionNumber: env.Revision.Number,
		ParticipantID:  env.Participant.ID,
		Inbox:          env.Inbox,
	}, nil
}

// pathSegment checks that raw is origin+prefix+<segment>+suffix and returns
// the segment (compared by the UUID check). Anything else fails the origin
// check: the URL is not the pinned endpoint.
func pathSegment(field, raw, origin, prefix, suffix string) (string, error) {
	rest, ok := strings.CutPrefix(raw, origin+prefix)
	if !ok {
		return "", originErr(field, raw, origin)
	}
	seg, ok := strings.CutSuffix(rest, suffix)
	if !ok || seg == "" || strings.ContainsAny(seg, "/?#") {
		return "", checkErr(CheckOrigin, "%s is not the %s%s<invitation_id>%s endpoint", field, origin, prefix, suffix)
	}
	return seg, nil
}

// originErr explains an origin failure without quoting the URL, which may
// hold the secret.
func originErr(field, raw, origin string) *CheckError {
	if raw == "" {
		return checkErr(CheckOrigin, "%s is missing", field)
	}
	if strings.HasPrefix(origin, "https://") && !strings.HasPrefix(raw, "https://") {
		return checkErr(CheckOrigin, "%s does not use https", field)
	}
	return checkErr(CheckOrigin, "%s is not on the pinned origin %s", field, origin)
}

// isBase64URL reports whether s is the canonical unpadded base64url encoding
// of exactly n bytes (unused trailing bits zero).
func isBase64URL(s string, n int) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == n
}
