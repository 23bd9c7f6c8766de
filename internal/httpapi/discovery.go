package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
)

func (s *Server) registerDiscoveryRoutes(r chi.Router) {
	r.Get("/api/health", s.handleHealth)
	r.Get("/problems/{code}", s.handleProblemType)
}

// Health is the /api/health document.
type Health struct {
	Status   string `json:"status"`
	Service  string `json:"service"`
	Version  string `json:"version"`
	Database string `json:"database"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.healthTimeout)
	defer cancel()
	h := Health{Status: "ok", Service: "consensus", Version: s.version, Database: "ok"}
	status := http.StatusOK
	if err := s.venue.Store.Ping(ctx); err != nil {
		h.Status, h.Database, status = "unavailable", "unreachable", http.StatusServiceUnavailable
		if ctx.Err() != nil {
			h.Database = "timeout"
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, status, h)
}

func (s *Server) handleProblemType(w http.ResponseWriter, r *http.Request) {
	pt, ok := problemByCode[chi.URLParam(r, "code")]
	if !ok {
		writeProblem(w, s.problem("not-found", genericNotFoundDetail))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write([]byte(pt.Code + " (HTTP " + itoa(pt.Status) + "): " + pt.Title + "\n\n" + pt.Explanation + "\n"))
}
