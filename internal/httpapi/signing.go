package httpapi

import (
	"net/http"
	"strconv"
)

// handleRecord serves the signed consensus-record/v1 once the outcome is
// final: the stored bytes, the same on every read, with a strong ETag.
func (s *Server) handleRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := s.venue.Record(r.Context(), participantFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	etag := `"sha256-` + rec.SHA256 + `"`
	h := w.Header()
	h.Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rec.Body)
}

// handleSigningKeys serves the JWKS of every service key that has run.
// Replicas register their key when they start, so the set is read from the
// database, not from this process's configuration.
func (s *Server) handleSigningKeys(w http.ResponseWriter, r *http.Request) {
	set, err := s.venue.SigningKeys(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b := mustJSON(set)
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("Cache-Control", publicCache)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
