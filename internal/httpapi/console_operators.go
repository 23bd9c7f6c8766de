package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/venue"
)

// The console's management of the workspace's operators; the routes'
// scopes say who may.

func (s *Server) handleOperatorList(w http.ResponseWriter, r *http.Request) {
	out, err := s.venue.ListOperators(r.Context(), operatorFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleOperatorInvite(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.OperatorInput](r, limitKey)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.InviteOperator(ctx, operatorFrom(r.Context()), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleOperatorRole(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.RoleInput](r, limitKey)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.SetOperatorRole(ctx, operatorFrom(r.Context()), chi.URLParam(r, "operatorId"), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleOperatorRemove(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.RemoveOperator(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "operatorId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
