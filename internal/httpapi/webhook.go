package httpapi

import (
	"net/http"

	"github.com/consensus-md/consensus/internal/venue"
)

// limitWebhook bounds PUT …/webhook: one URL of at most 2,048 bytes.
var limitWebhook = bodyLimit{Bytes: 4096, Wire: 4096}

// handleWebhookPut registers the participant's webhook endpoint,
// separate from the binding's runtimeEndpoint.
func (s *Server) handleWebhookPut(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.WebhookInput](r, limitWebhook)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.SetWebhook(ctx, participantFrom(r.Context()), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleWebhookGet shows the endpoint and its delivery state.
func (s *Server) handleWebhookGet(w http.ResponseWriter, r *http.Request) {
	out, err := s.venue.Webhook(r.Context(), participantFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleWebhookDelete removes the endpoint and drops what is queued for it.
func (s *Server) handleWebhookDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.venue.DeleteWebhook(r.Context(), participantFrom(r.Context())); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
