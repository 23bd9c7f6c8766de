package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/live"
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

// ProblemType is one row of the problem table: a stable code, its status,
// title and the explanation served at /problems/<code>, and the domain
// errors it answers.
type ProblemType struct {
	Code        string
	Status      int
	Title       string
	Explanation string
	// Errors are the domain errors this code answers, matched with
	// errors.Is in table order. Codes the HTTP layer raises itself (an
	// oversize body, a missing route) list none: *Error names them.
	Errors []error
	// Detail, when set, is the detail of every answer with this code, in
	// place of the error's text: that text could tell apart cases the
	// answer must not (not-found) or show internals (internal, retry-conflict).
	Detail string
}

// problemTypes is the one list of problems, indexed by ProblemCode: the writer, the /problems pages
// and the test against openapi.json's ProblemCode enum all read it. Adding a
// code means adding a constant, a row here and the code to
// api/components.yaml.
// ProblemCode names a row of the problem table. Every refusal names its
// code with one of these constants, so a misspelt code does not compile,
// and the table is an array indexed by them, so a code without a row
// cannot be declared past problemCodeCount (TestProblemTableMatchesOpenAPI
// checks that no row is left empty).
type ProblemCode uint8

// The problem codes, in the order problemFor matches domain errors.
const (
	ProblemInvalidRequest ProblemCode = iota
	ProblemSignatureRequired
	ProblemBadSignature
	ProblemCredentialInQuery
	ProblemUnauthorized
	ProblemKeyRevoked
	ProblemKeyExpired
	ProblemInsufficientScope
	ProblemCrossSite
	ProblemProofMismatch
	ProblemNotFound
	ProblemArtifactNotReady
	ProblemRecordNotReady
	ProblemProofNotReady
	ProblemEnrollmentExpired
	ProblemEnrollmentUsed
	ProblemMethodNotAllowed
	ProblemClaimConflict
	ProblemIdempotencyKeyReused
	ProblemRevisionMismatch
	ProblemRoomClosed
	ProblemAlreadyDecided
	ProblemEventLimit
	ProblemNotResendable
	ProblemRetryConflict
	ProblemPayloadTooLarge
	ProblemUnsupportedMediaType
	ProblemRateLimited
	ProblemTooManyWaiting
	ProblemPasskeyOrigin
	ProblemInternal
	ProblemUnavailable

	problemCodeCount
)

// String is the code as the wire carries it.
func (c ProblemCode) String() string { return problemTypes[c].Code }

var problemTypes = [problemCodeCount]ProblemType{
	ProblemInvalidRequest: {Code: "invalid-request", Status: 400, Title: "Invalid request",
		Explanation: "The request is malformed: a required field or header is missing, a value has the wrong type or shape, or the JSON has unknown fields. The field member names the input when one is at fault. Fix the request; retrying it unchanged will fail again.",
		Errors:      []error{room.ErrInvalid}},
	ProblemSignatureRequired: {Code: "signature-required", Status: 400, Title: "Signature required",
		Explanation: "This participant bound an Ed25519 key when it claimed its slot, so every event it posts must carry the header Consensus-Signature: its signature (unpadded base64url) over the RFC 8785 canonical bytes of the room-command/v2 object of the command, which holds the request's Idempotency-Key. Nothing was stored. A participant token alone cannot speak for a keyed participant.",
		Errors:      []error{room.ErrSignatureRequired}},
	ProblemBadSignature: {Code: "bad-signature", Status: 400, Title: "Signature does not verify",
		Explanation: "The Consensus-Signature is not an Ed25519 signature in unpadded base64url, does not verify with the key this participant bound over the canonical room-command/v2 bytes the service built from the request, signs the room-command/v1 object (no longer accepted for a new event), repeats a signature this participant already stored, or was sent by a participant that bound no key. Nothing was stored. Rebuild the command object (schema room-command/v2, version 2, agreement_id, invitation_id, participant_id, revision, revision_digest as bare hex, action, body, to or in_reply_to when the request carries them, and idempotency_key, the Idempotency-Key of the request), canonicalize it and sign those bytes: a signature speaks for one event.",
		Errors:      []error{room.ErrBadSignature}},
	ProblemCredentialInQuery: {Code: "credential-in-query", Status: 400, Title: "Credential in query string",
		Explanation: "A credential (secret, token, sessionToken, participantToken or emailProof) was sent in the URL query string. The request was refused and not logged, but treat that credential as exposed: URLs end up in proxy logs and histories. Stop using it. For an invitation secret or email proof, ask the operator who invited you to resend the invitation: a resend issues a fresh secret and proof and the old ones stop working. For a participant token, ask the operator to revoke it. A session token expires within 20 minutes by itself. If you cannot reach the operator, write to consensus@agentmail.to. Credentials travel only in the Authorization header or the JSON body."},
	ProblemUnauthorized: {Code: "unauthorized", Status: 401, Title: "Credential required",
		Explanation: "The route's credential is missing, expired, revoked, of another kind, or belongs to another invitation. The WWW-Authenticate header names the scheme this route accepts: Consensus-Session for claim, Consensus-Participant for room, events, stream, webhook, artifact, record, record proof and MCP, Bearer for the operator API.",
		Errors:      []error{venue.ErrUnauthorized}},
	ProblemKeyRevoked: {Code: "key-revoked", Status: 401, Title: "API key revoked",
		Explanation: "The Bearer credential is an API key that was revoked: it will never work again. Ask an owner of the workspace for a new key. If you did not revoke it yourself, someone did on purpose, often because it leaked: the workspace's audit log says who and when.",
		Errors:      []error{venue.ErrKeyRevoked}},
	ProblemKeyExpired: {Code: "key-expired", Status: 401, Title: "API key expired",
		Explanation: "The Bearer credential is an API key whose expiry has passed. Ask an owner of the workspace for a new key; an expired key never works again.",
		Errors:      []error{venue.ErrKeyExpired}},
	ProblemInsufficientScope: {Code: "insufficient-scope", Status: 403, Title: "Insufficient scope",
		Explanation: "The credential is valid but lacks the scope this request needs; the detail names it. The scopes are agreements:read, agreements:write, participants:manage, keys:manage, operators:manage and audit:read, and the contract states each operator route's scope (x-required-scope). Use a key that holds the scope, or ask an owner of the workspace for one: a key can only be given scopes its creator holds. The refusal is recorded in the workspace's audit log.",
		Errors:      []error{venue.ErrInsufficientScope}},
	ProblemCrossSite: {Code: "cross-site", Status: 403, Title: "Cross-site console request",
		Explanation: "A request of the web console that changes something must come from a page of this service's own origin (its Origin header, and Sec-Fetch-Site when the browser sends it) and carry the X-Consensus-CSRF token of its session. Nothing was changed. Reload the console and try again from there."},
	ProblemProofMismatch: {Code: "proof-mismatch", Status: 403, Title: "Email proof or inbox does not match",
		Explanation: "The emailProof is not this invitation's current proof, or the inbox is not the address the invitation was sent to. Use the proof from the most recent invitation email and the inbox it was delivered to.",
		Errors:      []error{room.ErrProofMismatch}},
	ProblemNotFound: {Code: "not-found", Status: 404, Title: "Not found",
		Explanation: "Nothing is available at this address. For invitations this one answer covers an unknown id, a wrong secret, an expired or revoked invitation, and an invitation of another kind, deliberately.",
		Errors:      []error{room.ErrNotFound, venue.ErrNoLog, venue.ErrLogEmpty, venue.ErrTileNotFound}, Detail: "Nothing is available at this address."},
	ProblemArtifactNotReady: {Code: "artifact-not-ready", Status: 404, Title: "Artifact not available",
		Explanation: "CONSENSUS.md exists only once the outcome is reached. Read the room to see the current outcome.",
		Errors:      []error{venue.ErrArtifactNotReady}},
	ProblemRecordNotReady: {Code: "record-not-ready", Status: 404, Title: "Record not available",
		Explanation: "The signed consensus-record/v1 exists once the outcome is final (reached, disagreed, no_consensus or expired). Read the room to see the current outcome.",
		Errors:      []error{venue.ErrRecordNotReady}},
	ProblemProofNotReady: {Code: "proof-not-ready", Status: 404, Title: "Record not in the log yet",
		Explanation: "The record is issued but the transparency log has not integrated it yet: integration runs about every second (CONSENSUS_LOG_INTERVAL). Retry after the number of seconds in Retry-After; the proof then names the checkpoint it is proven against.",
		Errors:      []error{venue.ErrProofNotReady}},
	ProblemEnrollmentExpired: {Code: "enrollment-expired", Status: 410, Title: "Enrollment link expired",
		Explanation: "This console enrollment link is past its 24 hours. Nothing was registered. Ask an owner of the workspace to invite you again: the new email carries a new link.",
		Errors:      []error{venue.ErrEnrollmentExpired}},
	ProblemEnrollmentUsed: {Code: "enrollment-used", Status: 410, Title: "Enrollment link already used",
		Explanation: "This console enrollment link already registered a passkey: a link works once. Nothing was registered now. Sign in with the passkey it registered, or ask an owner of the workspace for a new link.",
		Errors:      []error{venue.ErrEnrollmentUsed}},
	ProblemMethodNotAllowed: {Code: "method-not-allowed", Status: 405, Title: "Method not allowed",
		Explanation: "The route does not accept this HTTP method. The Allow header lists the methods it accepts."},
	ProblemClaimConflict: {Code: "claim-conflict", Status: 409, Title: "Slot already claimed differently",
		Explanation: "This participant slot was already claimed with a different inbox or runtime endpoint. The first claim fixed the binding, runtimeEndpoint included (or its absence), and it cannot be changed. To recover the participant token, replay the original claim body exactly (the same emailProof, inbox and runtimeEndpoint, or no runtimeEndpoint if the first claim had none) with any valid session: it returns the same participantToken and bindingDigest.",
		Errors:      []error{room.ErrClaimConflict}},
	ProblemIdempotencyKeyReused: {Code: "idempotency-key-reused", Status: 409, Title: "Idempotency-Key reused",
		Explanation: "This participant already used the Idempotency-Key for a different command. Use a new key for a new command; resend the same command to replay it.",
		Errors:      []error{room.ErrIdempotencyKeyReused}},
	ProblemRevisionMismatch: {Code: "revision-mismatch", Status: 409, Title: "Revision mismatch",
		Explanation: "The command's revision number or digest does not name the agreement's current revision. The detail names the current revision number and digest. Read the room, verify that revision (its canonical object hashes to the digest) and send its number and digest; nothing was recorded.",
		Errors:      []error{room.ErrRevisionMismatch}},
	ProblemRoomClosed: {Code: "room-closed", Status: 409, Title: "Room closed",
		Explanation: "The outcome is final (reached, disagreed, no_consensus or expired): the room accepts no more events, and no new revision can be locked. The room and, when reached, the artifact stay readable.",
		Errors:      []error{room.ErrRoomClosed}},
	ProblemAlreadyDecided: {Code: "already-decided", Status: 409, Title: "Already decided",
		Explanation: "This participant already posted its terminal decision (agree, disagree or abstain). A terminal decision is never changed.",
		Errors:      []error{room.ErrAlreadyDecided}},
	ProblemEventLimit: {Code: "event-limit", Status: 409, Title: "Event limit reached",
		Explanation: "This participant has stored the maximum number of events (100) on this revision.",
		Errors:      []error{room.ErrEventLimit}},
	ProblemNotResendable: {Code: "not-resendable", Status: 409, Title: "Invitation cannot be resent",
		Explanation: "The invitation's participant is revoked or the agreement's deadline has passed.",
		Errors:      []error{venue.ErrNotResendable}},
	// A unique violation the use cases' locks should have prevented: a
	// concurrent request wrote the same record first. 500 would tell the
	// client the service is broken; 409 tells it the state moved.
	ProblemRetryConflict: {Code: "retry-conflict", Status: 409, Title: "Concurrent write; retry",
		Explanation: "Another request wrote the same record at the same moment, and this request recorded nothing. Retry it: a retried claim, or an event with the same Idempotency-Key, replays the first answer when the first request succeeded.",
		Errors:      []error{room.ErrConflict}, Detail: "A concurrent request wrote the same record first; nothing was recorded. Retry the request."},
	ProblemPayloadTooLarge: {Code: "payload-too-large", Status: 413, Title: "Request body too large",
		Explanation: fmt.Sprintf("The request body exceeds this route's limit: %d bytes for exchange, %d for claim, %d for events, %d for creating or amending an agreement, %d for creating an API key, %d for revoke and resend. "+
			"A limit counts the body as sent, less what optional \\u escapes add to its strings, so a legal body is never refused for how it is escaped; at most %d bytes of a claim or of a key are read.",
			limitExchange.Bytes, limitClaim.Bytes, limitEvents.Bytes, limitCreate.Bytes, limitKey.Bytes, limitNoBody.Bytes, limitClaim.Wire)},
	ProblemUnsupportedMediaType: {Code: "unsupported-media-type", Status: 415, Title: "Unsupported media type",
		Explanation: "A request body must be sent with Content-Type: application/json (a charset parameter, if any, must be utf-8). A body without Content-Type, or of another media type, is not parsed. A request without a body needs no Content-Type."},
	ProblemRateLimited: {Code: "rate-limited", Status: 429, Title: "Too many requests",
		Explanation: "This client address sent too many exchange or claim requests. Wait the number of seconds in Retry-After."},
	ProblemTooManyWaiting: {Code: "too-many-waiting", Status: 429, Title: "Too many waiting requests",
		Explanation: fmt.Sprintf("This participant already holds %d waiting requests and streams on this replica (an operator's console, %d held reads), or the replica holds %d. Close one, or wait the number of seconds in Retry-After and try again. One stream, or one long poll at a time, is all an agent needs.", live.DefaultPerParticipant, live.DefaultPerOperator, live.DefaultPerReplica),
		Errors:      []error{live.ErrBusy}, Detail: "Too many waiting requests or streams: close one, or retry after Retry-After seconds."},
	// A deployment's configuration, not the request, is at fault: the
	// detail names the setting and the fix, which a 500 would hide.
	ProblemPasskeyOrigin: {Code: "passkey-origin", Status: 503, Title: "Passkeys unavailable at this origin",
		Explanation: "The web console signs operators in with passkeys (WebAuthn), whose relying party is the host of the service's public origin (CONSENSUS_PUBLIC_ORIGIN), and WebAuthn refuses an IP address there. Nothing was registered or signed in. The detail names the origin to set instead, such as http://localhost:8080 for a local run; the service's administrator sets it and restarts the service, and the console is then opened at that origin.",
		Errors:      []error{venue.ErrPasskeyOrigin}},
	ProblemInternal: {Code: "internal", Status: 500, Title: "Internal error",
		Explanation: "The service failed. Nothing was recorded unless a later read shows it. Quote the X-Request-Id header when reporting it.",
		Detail:      "The request failed; quote the X-Request-Id header when reporting it."},
	// The database is down, unreachable or slower than the configured
	// timeout. It says nothing about the request, so it must never surface
	// as unauthorized or not-found: a client would drop a valid token.
	ProblemUnavailable: {Code: "unavailable", Status: 503, Title: "Service unavailable",
		Explanation: "The service cannot reach its database, or the database did not answer in time. This says nothing about your credential or the resource: keep them. Retry after the number of seconds in Retry-After; retry an event with the same Idempotency-Key, which replays it if it was recorded.",
		Errors:      []error{room.ErrUnavailable}, Detail: "The database is unavailable or too slow; retry after Retry-After seconds with the same request."},
}

// StatusClientClosed is the status recorded (in the request log and the
// metrics) for a request whose client closed the connection before its
// answer: 499, as nginx names it. No client ever receives it.
const StatusClientClosed = 499

// retryAfterUnavailable is the Retry-After of a 503, in seconds: long
// enough that retrying clients do not pile onto a recovering database,
// short enough that a restart is hardly noticed.
const retryAfterUnavailable = "2"

// retryAfterBusy is the Retry-After of too-many-waiting, in seconds: a held
// request of the same participant ends within a minute at most.
const busyRetrySeconds = 5

var retryAfterBusy = strconv.Itoa(busyRetrySeconds)

// retryAfterOf is the Retry-After a refusal with code c carries, in
// seconds; "" for none. The MCP facade states it in its refusal.
func retryAfterOf(c ProblemCode) string {
	switch c {
	case ProblemUnavailable:
		return retryAfterUnavailable
	case ProblemTooManyWaiting:
		return retryAfterBusy
	case ProblemProofNotReady:
		return "1"
	}
	return ""
}

// problemByCode indexes problemTypes; the table is fixed, so it is built once.
var problemByCode = func() map[string]ProblemType {
	m := make(map[string]ProblemType, len(problemTypes))
	for _, p := range problemTypes {
		m[p.Code] = p
	}
	return m
}()

// Error is a refusal the HTTP layer makes itself, before or around the
// domain: a body too large or of the wrong type, malformed JSON, a query
// parameter out of range, a missing operator token, an unknown route. It
// names its problem code, which must be a row of the table. Domain errors
// need no wrapping in it: the table matches them.
type Error struct {
	// Code is the problem code.
	Code ProblemCode
	// Detail is the client-facing explanation of this occurrence.
	Detail string
	// Field names the input at fault, for invalid-request.
	Field string
	// Challenge is the WWW-Authenticate value, for unauthorized.
	Challenge string
}

// Error returns the detail.
func (e *Error) Error() string { return e.Detail }

// malformed is the invalid-request answer for a body or header that is
// wrong as a whole; the detail names fields, never their values.
func malformed(detail string) *Error {
	return &Error{Code: ProblemInvalidRequest, Detail: detail}
}

// invalidField is the invalid-request answer for one input the HTTP layer
// checks itself, worded as room.ValidationError words the domain's.
func invalidField(field, reason string) *Error {
	return &Error{Code: ProblemInvalidRequest, Detail: field + ": " + reason, Field: field}
}

// problemFor resolves err to its row of the table and the members of this
// occurrence. Unknown errors are internal.
func problemFor(err error) (pt ProblemType, detail, field, challenge string) {
	c, detail, field, challenge := problemCodeFor(err)
	return problemTypes[c], detail, field, challenge
}

// problemCodeFor is problemFor's code.
func problemCodeFor(err error) (c ProblemCode, detail, field, challenge string) {
	var he *Error
	if errors.As(err, &he) {
		if he.Code >= problemCodeCount {
			// Only a conversion from a number reaches here: a bug in this
			// package, and answering with it would break the contract's enum.
			return ProblemInternal, problemTypes[ProblemInternal].Detail, "", ""
		}
		return he.Code, he.Detail, he.Field, he.Challenge
	}
	c = ProblemInternal
	for i := range problemTypes {
		if matches(err, problemTypes[i].Errors) {
			c = ProblemCode(i)
			break
		}
	}
	// A typed error speaks for itself, without the context it was wrapped in.
	detail = withoutContext(err, problemTypes[c].Errors)
	var ve *room.ValidationError
	if c == ProblemInvalidRequest && errors.As(err, &ve) {
		detail, field = ve.Error(), ve.Field
	}
	var ue *venue.UnauthorizedError
	if c == ProblemUnauthorized && errors.As(err, &ue) {
		detail, challenge = ue.Error(), ue.Scheme
	}
	if d := problemTypes[c].Detail; d != "" {
		detail = d
	}
	return c, detail, field, challenge
}

// withoutContext is err's text without the prefixes ("venue: amend
// agreement: ") that wrapping added on the way up: it steps into the
// wrapped error while the wrapper only puts words before it and the inner
// error is still one of targets. A wrapper that adds words after keeps
// them, since they describe this occurrence.
func withoutContext(err error, targets []error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil || !matches(inner, targets) || !strings.HasSuffix(err.Error(), ": "+inner.Error()) {
			return err.Error()
		}
		err = inner
	}
}

// matches reports whether err is any of targets.
func matches(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// writeProblem is the one writer of error answers: it maps err through the
// problem table to application/problem+json with no-store. Only 5xx answers
// are logged with the error's text, under the request id the client also
// sees; the client never sees internals.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	c, detail, field, challenge := problemCodeFor(err)
	pt := problemTypes[c]
	if c == ProblemUnavailable && errors.Is(context.Cause(r.Context()), context.Canceled) {
		// The client went away first, and its cancellation stopped the
		// database call: not an outage. Nobody reads this answer; its
		// status is for the request log and the metrics.
		w.WriteHeader(StatusClientClosed)
		return
	}
	switch {
	case c == ProblemUnavailable:
		// An outage, not a bug: logged, but not as an error per request.
		s.log.WarnContext(r.Context(), "database unavailable", slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	case c == ProblemPasskeyOrigin:
		// The configuration, named at start and in the detail: not a bug.
		s.log.WarnContext(r.Context(), "console refused: passkeys cannot work at this origin", slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	case pt.Status >= 500:
		s.log.ErrorContext(r.Context(), "request failed", slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	}
	s.recordRefusal(r, c)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(Problem{Type: s.origin + "/problems/" + pt.Code, Title: pt.Title, Status: pt.Status, Detail: detail, Code: pt.Code, Field: field})
	b := buf.Bytes()
	h := w.Header()
	if challenge != "" {
		h.Set("WWW-Authenticate", challenge)
	}
	if ra := retryAfterOf(c); ra != "" {
		h.Set("Retry-After", ra)
	}
	h.Set("Content-Type", "application/problem+json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(pt.Status)
	_, _ = w.Write(b)
}

// handleProblemType serves the explanation of one code from the table.
func (s *Server) handleProblemType(w http.ResponseWriter, r *http.Request) {
	pt, ok := problemByCode[chi.URLParam(r, "code")]
	if !ok {
		s.writeProblem(w, r, room.ErrNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write([]byte(pt.Code + " (HTTP " + strconv.Itoa(pt.Status) + "): " + pt.Title + "\n\n" + pt.Explanation + "\n"))
}
