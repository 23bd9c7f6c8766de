package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/venue"
)

// handleExchange trades the invitation secret for a session. Exchange has
// no middleware: its credential may travel in the body, so the body is
// read first.
func (s *Server) handleExchange(w http.ResponseWriter, r *http.Request) {
	sec, err := exchangeSecret(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.Exchange(ctx, familyFrom(r.Context()), chi.URLParam(r, agentroute.IDParam), sec)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// exchangeSecret returns the secret from the JSON body or the
// Consensus-Invite header; both may be sent only if they agree. Checks in
// order: body size and type, header scheme, body syntax, presence.
func exchangeSecret(r *http.Request) (string, error) {
	b, err := readBody(r, limitExchange)
	if err != nil {
		return "", err
	}
	header := credential(r, venue.SchemeInvite)
	if r.Header.Get("Authorization") != "" && header == "" {
		return "", invalidField("Authorization", "on this route the header must be exactly: Consensus-Invite <secret>")
	}
	var in struct {
		Secret *string `json:"secret"`
	}
	if len(bytes.TrimLeft(b, " \t\r\n")) > 0 {
		if err := decodeObject(b, limitExchange, &in); err != nil {
			return "", err
		}
	}
	switch {
	case in.Secret != nil && header != "" && *in.Secret != header:
		return "", malformed("the secret in the body and in the Consensus-Invite header differ; send one")
	case in.Secret != nil && *in.Secret != "":
		return *in.Secret, nil
	case header != "":
		return header, nil
	default:
		return "", invalidField("secret", `is required: send {"secret": "..."} or Authorization: Consensus-Invite <secret>`)
	}
}

// handleClaim runs after requireSession: the session and the invitation
// are checked before the body is read.
func (s *Server) handleClaim(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.ClaimInput](r, limitClaim)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.Claim(ctx, sessionFrom(r.Context()), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleRoom answers a matching If-None-Match from the credential lookup
// alone (the room's ETag derives from the version it read); otherwise it
// writes the room (writeRoom) from the parts the venue keeps per version. With
// Prefer: wait=N a matching If-None-Match is held until the room changes
// for this reader or the wait ends (then 304).
func (s *Server) handleRoom(w http.ResponseWriter, r *http.Request) {
	p := participantFrom(r.Context())
	inm := r.Header.Get("If-None-Match")
	wait := preferWait(w, r)
	if tag := s.venue.RoomTag(p); inm != "" && etagMatches(inm, roomETag(tag)) {
		if wait <= 0 {
			w.Header().Set("ETag", roomETag(tag))
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.hold(w, r, wait, tag, func(w http.ResponseWriter, r *http.Request, fresh *venue.Principal, changed bool) {
			if !changed {
				w.Header().Set("ETag", roomETag(s.venue.RoomTag(fresh)))
				w.WriteHeader(http.StatusNotModified)
				return
			}
			ctx, cancel := s.freshDatabase(r)
			defer cancel()
			s.answerRoom(ctx, w, r, fresh, inm)
		})
		return
	}
	s.answerRoom(r.Context(), w, r, p, inm)
}

// answerRoom writes p's room.
func (s *Server) answerRoom(ctx context.Context, w http.ResponseWriter, r *http.Request, p *venue.Principal, inm string) {
	room, err := s.venue.RoomParts(ctx, p)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.writeRoom(w, r, room, inm)
}

// etagMatches implements If-None-Match with strong comparison of a list.
// It walks the list in place: a 304 should allocate nothing for it.
func etagMatches(header, etag string) bool {
	for header != "" {
		var candidate string
		candidate, header, _ = strings.Cut(header, ",")
		if c := strings.TrimSpace(candidate); c == "*" || c == etag {
			return true
		}
	}
	return false
}

// handleEventsCreate runs after participantCredential, which only read the
// token: the venue checks it in the transaction that stores the event, and
// the rest in the documented order (key and body syntax, replay,
// revision...). A body that cannot be read or decoded answers only once the
// credential is known good, so a bad credential still answers first.
func (s *Server) handleEventsCreate(w http.ResponseWriter, r *http.Request) {
	cred := credentialFrom(r.Context())
	in, err := decodeBody[venue.EventInput](r, limitEvents)
	ctx, cancel := s.afterBody(r)
	defer cancel()
	if err != nil {
		if _, authErr := s.venue.AuthParticipant(ctx, familyFrom(r.Context()), chi.URLParam(r, agentroute.IDParam), credential(r, venue.SchemeParticipant)); authErr != nil {
			err = authErr
		}
		s.writeProblem(w, r, err)
		return
	}
	posted, created, err := s.venue.PostEventAs(ctx, cred, r.Header.Get("Idempotency-Key"), signatureHeader(r), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, posted)
}

// signatureHeader returns the Consensus-Signature header, nil when absent
// (refuseRepeatedHeaders has answered a repeated one already).
func signatureHeader(r *http.Request) *string {
	if v := r.Header.Values("Consensus-Signature"); len(v) > 0 {
		return &v[0]
	}
	return nil
}

func (s *Server) handleArtifact(w http.ResponseWriter, r *http.Request) {
	art, err := s.venue.Artifact(r.Context(), participantFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeArtifact(w, r, art)
}

// writeArtifact answers with CONSENSUS.md: its bytes, their digests in
// Content-Digest, X-Consensus-SHA256 and the ETag, and what they conclude.
func writeArtifact(w http.ResponseWriter, r *http.Request, art *venue.Artifact) {
	h := w.Header()
	etag := `"sha256-` + art.SHA256 + `"`
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("Content-Digest", "sha-256=:"+canon.DigestBase64(art.Body)+":")
	h.Set("X-Consensus-SHA256", art.SHA256)
	h.Set("ETag", etag)
	h.Set("X-Consensus-Agreement-Id", art.AgreementID)
	h.Set("X-Consensus-Revision", strconv.Itoa(art.Revision))
	h.Set("X-Consensus-Finalized-At", art.FinalizedAt)
	h.Set("Content-Disposition", `attachment; filename="CONSENSUS.md"`)
	h.Set("Content-Length", strconv.Itoa(len(art.Body)))
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(art.Body)
	}
}
