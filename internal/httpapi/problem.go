package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// Problem is an RFC 9457 problem detail with the stable code member.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	// Field names the offending input, for invalid-request.
	Field string `json:"field,omitempty"`
}

// ProblemType describes one problem code: its status, title and the
// explanation served at /problems/<code>.
type ProblemType struct {
	Code        string
	Status      int
	Title       string
	Explanation string
}

// ProblemTypes lists every problem the service returns. Codes are stable.
var ProblemTypes = []ProblemType{
	{"invalid-request", 400, "Invalid request", "The request is malformed: a required field or header is missing, a value has the wrong type or shape, or the JSON has unknown fields. The field member names the input when one is at fault. Fix the request; retrying it unchanged will fail again."},
	{"credential-in-query", 400, "Credential in query string", "A credential (secret, token, sessionToken, participantToken or emailProof) was sent in the URL query string. Credentials travel only in the Authorization header or the JSON body. Treat the credential as exposed."},
	{"unauthorized", 401, "Credential required", "The route's credential is missing, expired, revoked, of another kind, or belongs to another invitation. The WWW-Authenticate header names the scheme this route accepts: Consensus-Session for claim, Consensus-Participant for room, events and artifact, Bearer for the operator API."},
	{"proof-mismatch", 403, "Email proof or inbox does not match", "The emailProof is not this invitation's current proof, or the inbox is not the address the invitation was sent to. Use the proof from the most recent invitation email and the inbox it was delivered to."},
	{"not-found", 404, "Not found", "Nothing is available at this address. For invitations this one answer covers an unknown id, a wrong secret, an expired or revoked invitation, and an invitation of another kind, deliberately."},
	{"artifact-not-ready", 404, "Artifact not available", "CONSENSUS.md exists only once the outcome is reached. Read the room to see the current outcome."},
	{"method-not-allowed", 405, "Method not allowed", "The route does not accept this HTTP method. The Allow header lists the methods it accepts."},
	{"claim-conflict", 409, "Slot already claimed differently", "This participant slot was already claimed with a different inbox or runtime endpoint. A claim can be replayed only with identical input."},
	{"idempotency-key-reused", 409, "Idempotency-Key reused", "This participant already used the Idempotency-Key for a different command. Use a new key for a new command; resend the same command to replay it."},
	{"revision-mismatch", 409, "Revision mismatch", "The command's revision number or digest does not name the agreement's current revision. Read the room, verify the current revision and send its number and digest."},
	{"room-closed", 409, "Room closed", "The outcome is final (reached, disagreed, no_consensus or expired): the room accepts no more events. The room and, when reached, the artifact stay readable."},
	{"already-decided", 409, "Already decided", "This participant already posted its terminal decision (agree, disagree or abstain). A terminal decision is never changed."},
	{"event-limit", 409, "Event limit reached", "This participant has stored the maximum number of events (100) on this revision."},
	{"not-resendable", 409, "Invitation cannot be resent", "The invitation's participant is revoked or the agreement's deadline has passed."},
	{"payload-too-large", 413, "Request body too large", "The request body exceeds this route's limit: 1,024 bytes for exchange, 4,096 for claim, 20 KiB for events, 256 KiB for operator requests."},
	{"unsupported-media-type", 415, "Unsupported media type", "Send request bodies as application/json."},
	{"rate-limited", 429, "Too many requests", "This client address sent too many exchange or claim requests. Wait the number of seconds in Retry-After."},
	{"internal", 500, "Internal error", "The service failed. Nothing was recorded unless a later read shows it. Quote the X-Request-Id header when reporting it."},
	{"unavailable", 503, "Service unavailable", "A dependency of the service, such as its database, is unreachable. Retry later."},
}

var problemByCode = func() map[string]ProblemType {
	m := map[string]ProblemType{}
	for _, p := range ProblemTypes {
		m[p.Code] = p
	}
	return m
}()

// genericNotFoundDetail is the one detail of every not-found answer, so the
// body never tells apart the cases it covers.
const genericNotFoundDetail = "Nothing is available at this address."

func (s *Server) problem(code, detail string) Problem {
	pt := problemByCode[code]
	return Problem{Type: s.origin + "/problems/" + code, Title: pt.Title, Status: pt.Status, Detail: detail, Code: code}
}

// writeProblem writes p as application/problem+json; private responses
// carry no-store.
func writeProblem(w http.ResponseWriter, p Problem) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
	b := buf.Bytes()
	h := w.Header()
	h.Set("Content-Type", "application/problem+json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

// fail maps an error to its problem. Only unexpected errors are logged, with
// the request id; the client never sees internals.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ve *room.ValidationError
	var ue *venue.UnauthorizedError
	var be *bodyError
	switch {
	case errors.As(err, &be):
		writeProblem(w, s.problem(be.code, be.detail))
	case errors.As(err, &ve):
		p := s.problem("invalid-request", ve.Error())
		p.Field = ve.Field
		writeProblem(w, p)
	case errors.As(err, &ue):
		w.Header().Set("WWW-Authenticate", ue.Scheme)
		writeProblem(w, s.problem("unauthorized", ue.Error()))
	case errors.Is(err, room.ErrNotFound):
		writeProblem(w, s.problem("not-found", genericNotFoundDetail))
	case errors.Is(err, venue.ErrArtifactNotReady):
		writeProblem(w, s.problem("artifact-not-ready", err.Error()))
	case errors.Is(err, room.ErrProofMismatch):
		writeProblem(w, s.problem("proof-mismatch", err.Error()))
	case errors.Is(err, room.ErrClaimConflict):
		writeProblem(w, s.problem("claim-conflict", err.Error()))
	case errors.Is(err, room.ErrIdempotencyKeyReused):
		writeProblem(w, s.problem("idempotency-key-reused", err.Error()))
	case errors.Is(err, room.ErrRevisionMismatch):
		writeProblem(w, s.problem("revision-mismatch", err.Error()))
	case errors.Is(err, room.ErrRoomClosed):
		writeProblem(w, s.problem("room-closed", err.Error()))
	case errors.Is(err, room.ErrAlreadyDecided):
		writeProblem(w, s.problem("already-decided", err.Error()))
	case errors.Is(err, room.ErrEventLimit):
		writeProblem(w, s.problem("event-limit", err.Error()))
	case errors.Is(err, venue.ErrNotResendable):
		writeProblem(w, s.problem("not-resendable", err.Error()))
	default:
		s.log.ErrorContext(r.Context(), "request failed", slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		writeProblem(w, s.problem("internal", "The request failed; quote the X-Request-Id header when reporting it."))
	}
}
