package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/translog"
	"github.com/consensus-md/consensus/internal/venue"
)

// The transparency log's routes (SPEC §21): the checkpoint and the tiles
// as C2SP tlog-tiles lays them out under /log/, and a record's proof.

// LogPrefix is the log's C2SP tlog-tiles prefix on the public origin.
const LogPrefix = "/log/"

// Cache lifetimes: a full tile never changes; a partial tile and the
// checkpoint are superseded as the log grows.
const (
	cacheFullTile    = "public, max-age=31536000, immutable"
	cachePartialTile = "public, max-age=10"
	cacheCheckpoint  = "public, max-age=1"
)

// handleLogCheckpoint serves the newest checkpoint: a signed note with the
// log's signature and the witnesses' cosignatures.
func (s *Server) handleLogCheckpoint(w http.ResponseWriter, r *http.Request) {
	b, err := s.venue.LogCheckpoint(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeBytes(w, "text/plain; charset=utf-8", cacheCheckpoint, b, true)
}

// handleLogTile serves /log/tile/<L>/<N>[.p/<W>] and
// /log/tile/entries/<N>[.p/<W>]; any other spelling is not found.
func (s *Server) handleLogTile(w http.ResponseWriter, r *http.Request) {
	t, err := translog.ParseTilePath("tile/" + chi.URLParam(r, "*"))
	if err != nil {
		s.writeProblem(w, r, venue.ErrTileNotFound)
		return
	}
	data, full, err := s.venue.LogTile(r.Context(), t)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	cache := cachePartialTile
	if full {
		cache = cacheFullTile
	}
	writeBytes(w, "application/octet-stream", cache, data, true)
}

// handleRecordProof serves the participant's consensus-log-proof/v1.
func (s *Server) handleRecordProof(w http.ResponseWriter, r *http.Request) {
	p, err := s.venue.RecordProof(r.Context(), participantFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeProof(w, p)
}

// handleAdminRecordProof serves an operator the proof of an agreement of
// its workspace.
func (s *Server) handleAdminRecordProof(w http.ResponseWriter, r *http.Request) {
	p, err := s.venue.OperatorRecordProof(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "agreementId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeProof(w, p)
}

// writeProof writes a proof bundle. It answers a participant's or an
// operator's credential, so like every such answer it is private
// (no-store); it also gains cosignatures as witnesses answer.
func writeProof(w http.ResponseWriter, p translog.Proof) {
	writeBytes(w, "application/json; charset=utf-8", "no-store", mustJSON(p), false)
}

// writeBytes writes a whole answer; a public one (the checkpoint, the
// tiles) may be read from any origin, as monitors in browsers do.
func writeBytes(w http.ResponseWriter, contentType, cache string, b []byte, public bool) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", cache)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if public {
		h.Set("Access-Control-Allow-Origin", "*")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
