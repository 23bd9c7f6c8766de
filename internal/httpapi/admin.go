package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/venue"
)

func (s *Server) handleAgreementCreate(w http.ResponseWriter, r *http.Request) {
	dry, err := dryRun(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if dry {
		skipRefusalAudit(r)
	}
	in, err := decodeBody[venue.CreateInput](r, limitCreate)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if dry {
		out, err := s.venue.PreviewAgreement(in)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.CreateAgreement(ctx, operatorFrom(r.Context()), in)
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
	out, err := s.venue.AmendAgreement(ctx, operatorFrom(r.Context()), chi.URLParam(r, "agreementId"), in)
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
	page, err := s.venue.ListAgreements(r.Context(), operatorFrom(r.Context()), limit, r.URL.Query().Get("cursor"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleAgreementGet(w http.ResponseWriter, r *http.Request) {
	d, err := s.venue.GetAgreement(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "agreementId"))
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
	out, err := s.venue.RevokeParticipant(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "participantId"))
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
	out, err := s.venue.ResendInvitation(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "invitationId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

// dryRun reads the dryRun query parameter: absent or false, a real
// creation; true, a preview that stores nothing.
func dryRun(r *http.Request) (bool, error) {
	switch v := r.URL.Query()["dryRun"]; {
	case len(v) == 0:
		return false, nil
	case len(v) == 1 && v[0] == "true":
		return true, nil
	case len(v) == 1 && v[0] == "false":
		return false, nil
	}
	return false, invalidField("dryRun", "must be true or false, given once")
}

func (s *Server) handleKeyCreate(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.KeyInput](r, limitKey)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.CreateKey(ctx, operatorFrom(r.Context()), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", s.origin+"/api/v1/admin/keys/"+out.ID)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleKeyList(w http.ResponseWriter, r *http.Request) {
	out, err := s.venue.ListKeys(r.Context(), operatorFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleKeyRevoke(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.RevokeKey(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "keyId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAuditList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeProblem(w, r, invalidField("after", "must be a whole number, 0 or more: the seq of the last entry already read"))
			return
		}
		after = n
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > venue.MaxAuditPage {
			s.writeProblem(w, r, invalidField("limit", fmt.Sprintf("must be a whole number from 1 to %d", venue.MaxAuditPage)))
			return
		}
		limit = n
	}
	page, err := s.venue.ListAudit(r.Context(), operatorFrom(r.Context()), after, limit)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
