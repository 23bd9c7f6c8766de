package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/consensus-md/consensus"
)

// Marker lines around the JSON envelope in an invitation email body.
const (
	BeginMarker = "---BEGIN CONSENSUS INVITATION V1---"
	EndMarker   = "---END CONSENSUS INVITATION V1---"
)

// DefaultOrigin is the origin invitations are pinned to when Policy.Origin is
// empty.
const DefaultOrigin = "https://consensus.md"

// MaxEnvelopeBytes bounds the JSON envelope. The issuer's envelopes are about
// 1.5 KB; anything far larger is not one of them.
const MaxEnvelopeBytes = 64 << 10

// maxJSONDepth bounds nesting while scanning for duplicate keys; the schema
// needs depth 2.
const maxJSONDepth = 16

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

const redacted = "[REDACTED]"

// Envelope mirrors the invitation-email/v1 JSON object. InviteURI and
// AgentClaim.EmailProof hold private credentials, so String, GoString,
// LogValue and MarshalJSON all redact them.
type Envelope struct {
	Schema        string         `json:"schema"`
	Version       int            `json:"version"`
	InvitationID  string         `json:"invitation_id"`
	AgreementID   string         `json:"agreement_id"`
	Participant   Participant    `json:"participant"`
	Inbox         string         `json:"inbox"`
	Title         string         `json:"title"`
	Deadline      time.Time      `json:"deadline"`
	ExpiresAt     time.Time      `json:"expires_at"`
	Revision      Revision       `json:"revision"`
	InviteURI     string         `json:"invite_uri"`
	AgentExchange ExchangeAction `json:"agent_exchange"`
	AgentClaim    ClaimAction    `json:"agent_claim"`
	Docs          string         `json:"docs"`
}

// Participant is the invited slot.
type Participant struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	DisplayName string `json:"display_name"`
}

// Revision names the locked agreement revision the invitation is for.
type Revision struct {
	Number int    `json:"number"`
	Digest string `json:"digest"`
}

// ExchangeAction is the endpoint that trades the fragment secret for a session.
type ExchangeAction struct {
	Method string `json:"method"`
	Href   string `json:"href"`
}

// ClaimAction is the endpoint that binds the slot, with the email-only proof.
type ClaimAction struct {
	Method     string `json:"method"`
	Href       string `json:"href"`
	EmailProof string `json:"email_proof"`
}

// redactedCopy returns e with the fragment secret and the proof replaced.
func (e Envelope) redactedCopy() Envelope {
	if i := strings.IndexByte(e.InviteURI, '#'); i >= 0 {
		e.InviteURI = e.InviteURI[:i] + "#" + redacted
	}
	if e.AgentClaim.EmailProof != "" {
		e.AgentClaim.EmailProof = redacted
	}
	return e
}

// envelopeFields is Envelope without methods, so formatting it cannot recurse.
type envelopeFields Envelope

// String formats the envelope with its credentials redacted.
func (e Envelope) String() string { return fmt.Sprintf("%+v", envelopeFields(e.redactedCopy())) }

// GoString formats the envelope for %#v with its credentials redacted.
func (e Envelope) GoString() string {
	return fmt.Sprintf("ingest.Envelope%+v", envelopeFields(e.redactedCopy()))
}

// LogValue logs the envelope's identifiers only.
func (e Envelope) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("invitation_id", e.InvitationID),
		slog.String("agreement_id", e.AgreementID),
		slog.String("participant_id", e.Participant.ID),
		slog.String("inbox", e.Inbox),
		slog.Int("revision", e.Revision.Number),
	)
}

// MarshalJSON encodes the envelope with the secret and proof redacted, so an
// envelope written to a log or a state file never carries them.
func (e Envelope) MarshalJSON() ([]byte, error) {
	return json.Marshal(envelopeFields(e.redactedCopy()))
}

// Invitation is what an agent needs once every check passed. Secret (the
// invite fragment value, including any csi_ prefix) and EmailProof are private
// bearer credentials: String, GoString, LogValue and MarshalJSON redact them.
type Invitation struct {
	Envelope       Envelope
	InvitationID   string
	AgreementID    string
	Origin         string // the pinned origin the URLs were checked against
	ExchangeURL    string
	ClaimURL       string
	Secret         string
	EmailProof     string
	RevisionDigest string
	RevisionNumber int
	ParticipantID  string
	Inbox          string
}

type invitationFields Invitation

func (inv Invitation) redactedCopy() invitationFields {
	inv.Envelope = inv.Envelope.redactedCopy()
	if inv.Secret != "" {
		inv.Secret = redacted
	}
	if inv.EmailProof != "" {
		inv.EmailProof = redacted
	}
	return invitationFields(inv)
}

// String formats the invitation with its credentials redacted.
func (inv Invitation) String() string { return fmt.Sprintf("%+v", inv.redactedCopy()) }

// GoString formats the invitation for %#v with its credentials redacted.
func (inv Invitation) GoString() string { return "ingest.Invitation" + inv.String() }

// LogValue logs the invitation's identifiers only.
func (inv Invitation) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("invitation_id", inv.InvitationID),
		slog.String("agreement_id", inv.AgreementID),
		slog.String("participant_id", inv.ParticipantID),
		slog.String("inbox", inv.Inbox),
		slog.String("origin", inv.Origin),
		slog.Int("revision", inv.RevisionNumber),
	)
}

// MarshalJSON encodes the invitation with the secret and proof redacted.
func (inv Invitation) MarshalJSON() ([]byte, error) {
	return json.Marshal(inv.redactedCopy())
}

// Policy says which origin invitations must come from.
type Policy struct {
	// Origin is the pinned origin, scheme://host[:port] with no path;
	// DefaultOrigin when empty.
	Origin string
	// AllowHTTPLoopback accepts an http:// Origin, and only when its host is
	// 127.0.0.1, ::1 or localhost (local runs).
	AllowHTTPLoopback bool
}

// normalize returns the origin as compared against envelope URLs:
// lower-case scheme://host[:port]. A bad policy is a configuration error, not
// a CheckError: no email can pass it.
func (p Policy) normalize() (string, error) {
	raw := p.Origin
	if raw == "" {
		raw = DefaultOrigin
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("ingest: policy origin: %w", err)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.Host == "" {
		return "", errors.New("ingest: policy origin must be scheme://host[:port] with no path, query or user")
	}
	host := strings.ToLower(u.Host)
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowHTTPLoopback {
			return "", errors.New("ingest: policy origin uses http:// but AllowHTTPLoopback is off")
		}
		if !isLoopbackName(u.Hostname()) {
			return "", errors.New("ingest: policy origin uses http:// on a host other than 127.0.0.1, ::1 or localhost")
		}
	default:
		return "", errors.New("ingest: policy origin scheme must be https (or http on loopback)")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", errors.New("ingest: policy origin has an invalid port")
		}
	}
	return u.Scheme + "://" + host, nil
}

// Validate reports whether the policy is usable.
func (p Policy) Validate() error {
	_, err := p.normalize()
	return err
}

func isLoopbackName(host string) bool {
	return host == "127.0.0.1" || host == "::1" || strings.EqualFold(host, "localhost")
}

// isLoopbackHost is isLoopbackName plus any literal loopback IP.
func isLoopbackHost(host string) bool {
	if isLoopbackName(host) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckError reports which check refused an email. Detail names fields and
// the rule they broke; it never quotes envelope values, so it cannot leak the
// secret or the proof.
type CheckError struct {
	Check  string // one of the Check* constants
	Detail string
}

func (e *CheckError) Error() string {
	return "ingest: " + e.Check + " check failed: " + e.Detail
}

func checkErr(check, format string, args ...any) *CheckError {
	return &CheckError{Check: check, Detail: fmt.Sprintf(format, args...)}
}

// ExtractBlock returns the bytes between the marker lines of the one
// invitation block in body. Marker lines must match exactly; they may end in
// "\n" or "\r\n". It returns a *CheckError with Check "block" when there is no
// block, more than one, a BEGIN without END, an END without BEGIN, or a
// marker line with extra whitespace around it.
func ExtractBlock(body []byte) ([]byte, error) {
	blocks, err := findBlocks(body)
	if err != nil {
		return nil, err
	}
	switch len(blocks) {
	case 0:
		return nil, checkErr(CheckBlock, "no invitation block")
	case 1:
		return blocks[0], nil
	default:
		return nil, checkErr(CheckBlock, "%d invitation blocks; expected exactly one", len(blocks))
	}
}

// findBlocks returns every complete block in body; zero blocks and no stray
// markers is not an error (the mail is simply not an invitation).
func findBlocks(body []byte) ([][]byte, error) {
	var blocks [][]byte
	start := -1 // offset of the first byte after the BEGIN line, or -1
	for off := 0; off < len(body); {
		end := bytes.IndexByte(body[off:], '\n')
		next := len(body)
		if end >= 0 {
			next = off + end + 1
		} else {
			end = len(body) - off
		}
		line := body[off : off+end]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case string(line) == BeginMarker:
			if start >= 0 {
				return nil, checkErr(CheckBlock, "BEGIN marker inside a block")
			}
			start = next
		case string(line) == EndMarker:
			if start < 0 {
				return nil, checkErr(CheckBlock, "END marker without BEGIN")
			}
			blocks = append(blocks, body[start:off])
			start = -1
		default:
			if t := string(bytes.TrimSpace(line)); t == BeginMarker || t == EndMarker {
				return nil, checkErr(CheckBlock, "marker line with surrounding whitespace")
			}
		}
		off = next
	}
	if start >= 0 {
		return nil, checkErr(CheckBlock, "BEGIN marker without END (truncated block)")
	}
	return blocks, nil
}

// The envelope schema, compiled once from the embedded copy. Loading any
// other URL is refused, so compiling never touches the network.
const envelopeSchemaURL = "https://consensus.md/schemas/invitation-email/v1"

var envelopeSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	f, err := consensus.Schemas.Open("schemas/invitation-email/v1.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	c.AssertFormat()
	if err := c.AddResource(envelopeSchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(envelopeSchemaURL)
})

type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("ingest: schema loader: refusing to load %s", u)
}

// ParseEnvelope validates raw (the bytes of one block) and returns the
// invitation. It runs, in order: a JSON check (one object, valid UTF-8, no
// duplicate keys), the embedded schema (with format assertions; unknown fields
// are refused), then the guide's five checks under p. When the schema refuses
// the envelope and one of the five checks also fails on what could be
// decoded, that check is reported (a bad fragment is "fragment", not
// "schema"), since it is the precise diagnosis. Every refusal is a
// *CheckError; an unusable p is a plain error. ParseEnvelope performs no I/O.
func ParseEnvelope(raw []byte, p Policy) (*Invitation, error) {
	origin, err := p.normalize()
	if err != nil {
		return nil, err
	}
	sch, err := envelopeSchema()
	if err != nil {
		return nil, fmt.Errorf("ingest: compile envelope schema: %w", err)
	}
	if len(raw) > MaxEnvelopeBytes {
		return nil, checkErr(CheckJSON, "envelope is larger than %d bytes", MaxEnvelopeBytes)
	}
	if !utf8.Valid(raw) {
		return nil, checkErr(CheckJSON, "envelope is not valid UTF-8")
	}
	if err := scanJSON(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, checkErr(CheckJSON, "envelope is not one JSON value")
	}
	if verr := sch.Validate(doc); verr != nil {
		env := lenientEnvelope(doc)
		if _, cerr := checkEnvelope(&env, origin); cerr != nil {
			return nil, cerr
		}
		return nil, &CheckError{Check: CheckSchema, Detail: describeSchemaError(verr)}
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		// The schema admits a few spellings Go will not decode into these
		// types (1.0 for an integer); the issuer never writes them.
		return nil, checkErr(CheckSchema, "envelope does not decode into the v1 fields")
	}
	return checkEnvelope(&env, origin)
}

// scanJSON walks raw token by token: exactly one JSON object, no duplicate
// key in any object, bounded depth, nothing after it.
func scanJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*jsonFrame
	first := true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 || first {
				return checkErr(CheckJSON, "envelope is truncated or empty")
			}
			return nil
		}
		if err != nil {
			return checkErr(CheckJSON, "envelope is not well-formed JSON")
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return checkErr(CheckJSON, "envelope is not a JSON object")
			}
		} else if len(stack) == 0 {
			return checkErr(CheckJSON, "data after the envelope object")
		}
		first = false
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				markValueDone(stack)
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return checkErr(CheckJSON, "envelope is not well-formed JSON")
			}
			if _, dup := top.keys[key]; dup {
				return checkErr(CheckJSON, "duplicate key in a JSON object")
			}
			top.keys[key] = struct{}{}
			top.expKey = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= maxJSONDepth {
				return checkErr(CheckJSON, "envelope nests deeper than %d levels", maxJSONDepth)
			}
			stack = append(stack, &jsonFrame{keys: map[string]struct{}{}, object: d == '{', expKey: d == '{'})
		case ']':
			stack = stack[:len(stack)-1]
			markValueDone(stack)
		default:
			markValueDone(stack)
		}
	}
}

type jsonFrame struct {
	keys   map[string]struct{}
	object bool
	expKey bool // inside an object, the next token is a key or '}'
}

// markValueDone notes that a value ended, so an enclosing object expects a
// key next.
func markValueDone(stack []*jsonFrame) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].expKey = true
	}
}

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	secretRE = regexp.MustCompile(`^(csi_)?[A-Za-z0-9_-]{43}$`)
	proofRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`)
)

const (
	invitePathPrefix = "/invite/"
	actionPathPrefix = "/api/v1/agent/invitations/"
)

// checkEnvelope applies the guide's five checks, in the guide's order, to a
// decoded envelope and builds the Invitation. URLs are compared as strings
// against the normalized origin: a URL passes only when it is byte for byte
// origin + the expected path, which leaves no room for user info, another
// port, a look-alike host, a query or a second fragment.
func checkEnvelope(env *Envelope, origin string) (*Invitation, error) {
	// Checks 1 and 2: one HTTPS (or allowed loopback HTTP) origin everywhere.
	inviteBase, fragment, hasFragment := strings.Cut(env.InviteURI, "#")
	inviteID, err := pathSegment("invite_uri", inviteBase, origin, invitePathPrefix, "")
	if err != nil {
		return nil, err
	}
	exchangeID, err := pathSegment("agent_exchange.href", env.AgentExchange.Href, origin, actionPathPrefix, "/exchange")
	if err != nil {
		return nil, err
	}
	claimID, err := pathSegment("agent_claim.href", env.AgentClaim.Href, origin, actionPathPrefix, "/claim")
	if err != nil {
		return nil, err
	}
	if env.Docs != origin+"/llms.txt" {
		return nil, originErr("docs", env.Docs, origin)
	}
	if env.AgentExchange.Method != "POST" || env.AgentClaim.Method != "POST" {
		return nil, checkErr(CheckSchema, "action method is not POST")
	}

	// Check 3: the same invitation UUID in the envelope and every path.
	if !uuidRE.MatchString(env.InvitationID) {
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

// describeSchemaError summarizes a validation failure from the schema side:
// instance locations (made of schema property names) and keywords. The
// library's own messages quote instance values, which could be the secret or
// the proof, so they are not used.
func describeSchemaError(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return "envelope does not match the v1 schema"
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(parts) >= 5 {
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		kw := ""
		if path := e.ErrorKind.KeywordPath(); len(path) > 0 {
			kw = path[len(path)-1]
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			kw = "required " + strings.Join(k.Missing, ", ")
		case *kind.AdditionalProperties:
			kw = fmt.Sprintf("%d unknown field(s)", len(k.Properties))
		}
		parts = append(parts, loc+": "+kw)
	}
	walk(verr)
	if len(parts) == 0 {
		return "envelope does not match the v1 schema"
	}
	return "envelope does not match the v1 schema: " + strings.Join(parts, "; ")
}

// lenientEnvelope picks out of a schema-invalid document the string fields
// the five checks read; anything missing or of another type stays empty.
func lenientEnvelope(doc any) Envelope {
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return s
	}
	obj := func(m map[string]any, k string) map[string]any {
		o, _ := m[k].(map[string]any)
		return o
	}
	root, _ := doc.(map[string]any)
	ex, cl := obj(root, "agent_exchange"), obj(root, "agent_claim")
	return Envelope{
		InvitationID:  str(root, "invitation_id"),
		InviteURI:     str(root, "invite_uri"),
		AgentExchange: ExchangeAction{Method: str(ex, "method"), Href: str(ex, "href")},
		AgentClaim:    ClaimAction{Method: str(cl, "method"), Href: str(cl, "href"), EmailProof: str(cl, "email_proof")},
		Docs:          str(root, "docs"),
	}
}
