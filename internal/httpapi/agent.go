package httpapi

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/venue"
)

func (s *Server) registerAgentRoutes(r chi.Router) {
	r.Route("/api/v1/agent/invitations/{invitationId}", func(r chi.Router) {
		r.Use(noStore)
		r.With(s.limit("exchange")).Post("/exchange", s.handleExchange)
		r.With(s.limit("claim")).Post("/claim", s.handleClaim)
		r.Get("/room", s.handleRoom)
		r.Post("/events", s.handleEventsCreate)
		r.Get("/artifact", s.handleArtifact)
		r.Head("/artifact", s.handleArtifact)
	})
}

// credential returns the token of an Authorization header in the given
// scheme (case-insensitive scheme, one space), or "".
func credential(r *http.Request, scheme string) string {
	h := r.Header.Get("Authorization")
	name, value, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(name, scheme) {
		return ""
	}
	return strings.TrimSpace(value)
}

func (s *Server) handleExchange(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r, limitExchange)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	header := credential(r, venue.SchemeInvite)
	if r.Header.Get("Authorization") != "" && header == "" {
		s.writeProblem(w, r, malformed("the Authorization header must use the Consensus-Invite scheme on this route"))
		return
	}
	var in struct {
		Secret *string `json:"secret"`
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := decodeStrict(b, &in); err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	var sec string
	switch {
	case in.Secret != nil && header != "" && *in.Secret != header:
		s.writeProblem(w, r, malformed("the secret in the body and in the Consensus-Invite header differ; send one"))
		return
	case in.Secret != nil && *in.Secret != "":
		sec = *in.Secret
	case header != "":
		sec = header
	default:
		s.writeProblem(w, r, invalidField("secret", `is required: send {"secret": "..."} or Authorization: Consensus-Invite <secret>`))
		return
	}
	out, err := s.venue.Exchange(r.Context(), chi.URLParam(r, "invitationId"), sec)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleClaim(w http.ResponseWriter, r *http.Request) {
	token := credential(r, venue.SchemeSession)
	if token == "" {
		s.writeProblem(w, r, &venue.UnauthorizedError{Scheme: venue.SchemeSession})
		return
	}
	grant, err := s.venue.AuthSession(r.Context(), chi.URLParam(r, "invitationId"), token)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b, err := readBody(r, limitClaim)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var in venue.ClaimInput
	if err := decodeStrict(b, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.Claim(r.Context(), grant, in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// participant authenticates the Consensus-Participant credential of the
// invitation in the path.
func (s *Server) participant(w http.ResponseWriter, r *http.Request) (*venue.Principal, bool) {
	token := credential(r, venue.SchemeParticipant)
	if token == "" {
		s.writeProblem(w, r, &venue.UnauthorizedError{Scheme: venue.SchemeParticipant})
		return nil, false
	}
	p, err := s.venue.AuthParticipant(r.Context(), chi.URLParam(r, "invitationId"), token)
	if err != nil {
		s.writeProblem(w, r, err)
		return nil, false
	}
	return p, true
}

func (s *Server) handleRoom(w http.ResponseWriter, r *http.Request) {
	p, ok := s.participant(w, r)
	if !ok {
		return
	}
	view, err := s.venue.Room(r.Context(), p)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	etag, err := view.ETag()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// etagMatches implements If-None-Match with strong comparison of a list.
func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		c := strings.TrimSpace(candidate)
		if c == "*" || c == etag {
			return true
		}
	}
	return false
}

func (s *Server) handleEventsCreate(w http.ResponseWriter, r *http.Request) {
	p, ok := s.participant(w, r)
	if !ok {
		return
	}
	b, err := readBody(r, limitEvents)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var in venue.EventInput
	if err := decodeStrict(b, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	posted, created, err := s.venue.PostEvent(r.Context(), p, r.Header.Get("Idempotency-Key"), in)
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

func (s *Server) handleArtifact(w http.ResponseWriter, r *http.Request) {
	p, ok := s.participant(w, r)
	if !ok {
		return
	}
	art, err := s.venue.Artifact(r.Context(), p)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	h := w.Header()
	etag := `"sha256-` + art.SHA256 + `"`
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("Content-Digest", "sha-256=:"+canon.DigestBase64(art.Body)+":")
	h.Set("X-Consensus-SHA256", art.SHA256)
	h.Set("ETag", etag)
	h.Set("X-Consensus-Agreement-Id", art.AgreementID)
	h.Set("X-Consensus-Revision", itoa(art.Revision))
	h.Set("X-Consensus-Finalized-At", art.FinalizedAt)
	h.Set("Content-Disposition", `attachment; filename="CONSENSUS.md"`)
	h.Set("Content-Length", itoa(len(art.Body)))
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(art.Body)
	}
}
