package httpapi

import (
	"net/http"
	"strconv"

	"github.com/consensus-md/consensus/internal/jwk"
)

// handleRecord serves the signed consensus-record/v1 once the outcome is
// final: the stored bytes, the same on every read, with a strong ETag.
func (s *Server) handleRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := s.venue.Record(r.Context(), participantFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if etag := recordETag(rec.SHA256); etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeRecord(w, rec.SHA256, rec.Body)
}

// recordETag is a signed record's ETag: the SHA-256 of its stored bytes.
func recordETag(sha256 string) string { return `"sha256-` + sha256 + `"` }

// writeRecord answers 200 with a signed record's stored bytes, whose
// SHA-256 is sha256, for the participant and console routes alike.
func writeRecord(w http.ResponseWriter, sha256 string, body []byte) {
	h := w.Header()
	h.Set("ETag", recordETag(sha256))
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// LogKey names the transparency log in /.well-known/consensus-keys: its
// origin, its signed-note verifier key and its checkpoint's URL.
type LogKey struct {
	Origin      string `json:"origin"`
	VerifierKey string `json:"verifierKey"`
	Checkpoint  string `json:"checkpoint"`
}

// keysDocument is /.well-known/consensus-keys: a JWKS, with the member log
// beside keys when the deployment keeps a transparency log (a JWKS reader
// ignores members it does not know, RFC 7517 section 5).
type keysDocument struct {
	Keys []jwk.Published `json:"keys"`
	Log  *LogKey         `json:"log,omitempty"`
}

// logKey is the log member of the keys document, nil without a log.
func (s *Server) logKey() *LogKey {
	if s.venue == nil {
		return nil
	}
	origin, vkey, ok := s.venue.LogKey()
	if !ok {
		return nil
	}
	return &LogKey{Origin: origin, VerifierKey: vkey, Checkpoint: s.origin + LogPrefix + "checkpoint"}
}

// handleSigningKeys serves the JWKS of every service key that has run.
// Replicas register their key when they start, so the set is read from the
// database, not from this process's configuration. The log's key is this
// process's: every replica of a deployment is configured with the same.
func (s *Server) handleSigningKeys(w http.ResponseWriter, r *http.Request) {
	set, err := s.venue.SigningKeys(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b := mustJSON(keysDocument{Keys: set.Keys, Log: s.logKey()})
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("Cache-Control", publicCache)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
