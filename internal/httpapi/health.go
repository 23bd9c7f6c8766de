package httpapi

import (
	"context"
	"net/http"
)

// Pinger reports whether the database answers. *store.Store is one; health
// needs nothing else from it, so it asks for nothing else.
type Pinger interface {
	// Ping returns nil when the database answered before ctx ended.
	Ping(ctx context.Context) error
}

// Health is the /api/health document.
type Health struct {
	Status   string `json:"status"`
	Service  string `json:"service"`
	Version  string `json:"version"`
	Database string `json:"database"`
}

// handleHealth answers 200 while the database answers within the health
// timeout, 503 naming why otherwise.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.healthTimeout)
	defer cancel()
	h := Health{Status: "ok", Service: "consensus", Version: s.version, Database: "ok"}
	status := http.StatusOK
	if err := s.pinger.Ping(ctx); err != nil {
		h.Status, h.Database, status = "unavailable", "unreachable", http.StatusServiceUnavailable
		if ctx.Err() != nil {
			h.Database = "timeout"
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, status, h)
}
