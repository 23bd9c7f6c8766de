package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

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
	w.Header().Set("Location", s.operatorURL(r, "/agreements/"+out.AgreementID))
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
	w.Header().Set("Location", s.operatorURL(r, "/agreements/"+out.AgreementID))
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleAgreementList(w http.ResponseWriter, r *http.Request) {
	limit, err := agreementPageLimit(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
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
	w.Header().Set("Location", s.operatorURL(r, "/keys/"+out.ID))
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
	q, err := auditQuery(r.URL.Query())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	page, err := s.venue.SearchAudit(r.Context(), operatorFrom(r.Context()), q)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// auditQuery reads the audit routes' query parameters: the page (order,
// after or before, limit) and the filters (actor, action, agreementId).
func auditQuery(v url.Values) (venue.AuditQuery, error) {
	var q venue.AuditQuery
	switch v.Get("order") {
	case "", "oldest":
	case "newest":
		q.Newest = true
	default:
		return q, invalidField("order", "must be oldest (the default) or newest")
	}
	seq := func(name, use string) (int64, error) {
		s := v.Get(name)
		if s == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, invalidField(name, "must be a whole number, 0 or more: "+use)
		}
		return n, nil
	}
	var err error
	if q.After, err = seq("after", "the seq of the last entry already read"); err != nil {
		return q, err
	}
	if q.Before, err = seq("before", "the seq of the oldest entry already read"); err != nil {
		return q, err
	}
	if q.Newest && v.Get("after") != "" {
		return q, invalidField("after", "pages newest first go on with before, not after")
	}
	if !q.Newest && v.Get("before") != "" {
		return q, invalidField("before", "only pages newest first (order=newest) take before")
	}
	q.Limit = 100
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > venue.MaxAuditPage {
			return q, invalidField("limit", fmt.Sprintf("must be a whole number from 1 to %d", venue.MaxAuditPage))
		}
		q.Limit = n
	}
	q.Actor, q.Action = v.Get("actor"), v.Get("action")
	if len(q.Actor) > 200 || !utf8.ValidString(q.Actor) {
		return q, invalidField("actor", "must be at most 200 bytes of text: an actor's id, or a piece of its name")
	}
	if len(q.Action) > 100 || !utf8.ValidString(q.Action) {
		return q, invalidField("action", "must be one action, such as agreement.create")
	}
	if a := v.Get("agreementId"); a != "" {
		id, err := uuid.Parse(a)
		if err != nil || len(a) != 36 {
			return q, invalidField("agreementId", "must be an agreement id (a UUID)")
		}
		q.AgreementID = id.String()
	}
	return q, nil
}

// agreementPageLimit is an agreement list's limit parameter: 50 when
// absent, else a whole number from 1 to 100.
func agreementPageLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		return 0, invalidField("limit", "must be a whole number from 1 to 100")
	}
	return n, nil
}
