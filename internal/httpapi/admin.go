package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/venue"
)

func (s *Server) handleAgreementCreate(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.CreateInput](r, limitCreate)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.CreateAgreement(ctx, in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", s.origin+"/api/v1/admin/agreements/"+out.AgreementID)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleAgreementAmend(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.AmendInput](r, limitCreate)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.AmendAgreement(ctx, chi.URLParam(r, "agreementId"), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", s.origin+"/api/v1/admin/agreements/"+out.AgreementID)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleAgreementList(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.writeProblem(w, r, invalidField("limit", "must be a whole number from 1 to 100"))
			return
		}
		limit = n
	}
	page, err := s.venue.ListAgreements(r.Context(), limit, r.URL.Query().Get("cursor"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleAgreementGet(w http.ResponseWriter, r *http.Request) {
	d, err := s.venue.GetAgreement(r.Context(), chi.URLParam(r, "agreementId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) handleParticipantRevoke(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.RevokeParticipant(r.Context(), chi.URLParam(r, "participantId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleInvitationResend(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.ResendInvitation(r.Context(), chi.URLParam(r, "invitationId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}
