package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
)

// The console's reads of agreements. The list and one agreement may be
// held (Prefer: wait=N with If-None-Match naming what the page shows) by
// the one hold of live.go (holdRead): the list wakes with its workspace,
// an agreement with its room and, to notice at once a removal that ends
// the session, with its workspace too.

// consoleRead reads what a held console read answers: its body (unless
// full is unset: then only the tag is needed) and its ETag.
type consoleRead func(ctx context.Context, full bool) (body []byte, tag string, err error)

// handleConsoleAgreement is one agreement for the console: the operator's
// view and the terms, of one revision. Held, it answers when the room
// changes on any replica, the wait ends, or the session ends.
func (s *Server) handleConsoleAgreement(w http.ResponseWriter, r *http.Request) {
	c := operatorFrom(r.Context())
	id := chi.URLParam(r, "agreementId")
	read := func(ctx context.Context, _ bool) ([]byte, string, error) {
		ctx, cancel := s.bound(ctx)
		defer cancel()
		d, err := s.venue.GetConsoleAgreement(ctx, c, id)
		if err != nil {
			return nil, "", err
		}
		b, err := json.Marshal(d)
		if err != nil {
			return nil, "", err
		}
		sum := sha256.Sum256(b)
		return b, `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`, nil
	}
	// A change to the room heard after this mark may have been committed
	// after the read: the hold then looks again before it waits.
	mark := s.hub.Mark()
	body, tag, err := read(r.Context(), true)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	wait := preferWait(w, r)
	if seen := r.Header.Get("If-None-Match"); wait > 0 && etagMatches(seen, tag) {
		agreementID, _ := uuid.Parse(id) // the read parsed it
		operatorID, _ := uuid.Parse(c.Actor.ID)
		room, err := s.hub.Join(agreementID, operatorID)
		if err != nil {
			w.Header().Del("Preference-Applied")
			s.writeProblem(w, r, err)
			return
		}
		others, err := s.lists.Join(c.WorkspaceID, operatorID)
		if err != nil {
			room.Leave()
			w.Header().Del("Preference-Applied")
			s.writeProblem(w, r, err)
			return
		}
		s.holdConsole(w, r, &heldRead{wait: wait, on: room, also: others}, seen, s.hub.ChangedSince(agreementID, mark), read)
		return
	}
	writeConsoleRead(w, body, tag)
}

// handleConsoleAgreements is the console's agreement list, each line with
// what it waits for. Held, it answers when something in the workspace
// changes on any replica in a way the list shows, the wait ends, or the
// session ends.
func (s *Server) handleConsoleAgreements(w http.ResponseWriter, r *http.Request) {
	c := operatorFrom(r.Context())
	limit, err := agreementPageLimit(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	read := func(ctx context.Context, full bool) ([]byte, string, error) {
		ctx, cancel := s.bound(ctx)
		defer cancel()
		page, tag, err := s.venue.ConsoleAgreements(ctx, c, limit, cursor, full)
		if err != nil || !full {
			return nil, tag, err
		}
		b, err := json.Marshal(page)
		return b, tag, err
	}
	wait := preferWait(w, r)
	if seen := r.Header.Get("If-None-Match"); wait > 0 && seen != "" {
		// Join before reading: a change committed after the read wakes it.
		operatorID, _ := uuid.Parse(c.Actor.ID)
		waiter, err := s.lists.Join(c.WorkspaceID, operatorID)
		if err != nil {
			w.Header().Del("Preference-Applied")
			s.writeProblem(w, r, err)
			return
		}
		_, tag, err := read(r.Context(), false)
		if err == nil && etagMatches(seen, tag) {
			s.holdConsole(w, r, &heldRead{wait: wait, on: waiter}, seen, false, read)
			return
		}
		waiter.Leave()
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	body, tag, err := read(r.Context(), true)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeConsoleRead(w, body, tag)
}

// holdConsole holds a console read whose tag matches seen (holdRead),
// joined to h's signals. Each wake-up reads the session again, and an end
// of it is answered at once (401); then, unless only h.also woke it (the
// workspace's signal beside the room's, there for the session alone), the
// read's tag: once it no longer matches seen, the read is answered. With
// recheck it looks once before waiting too. A wait that ends unchanged
// reads the session and the answer again.
func (s *Server) holdConsole(w http.ResponseWriter, r *http.Request, h *heldRead, seen string, recheck bool, read consoleRead) {
	var (
		ended error  // why the session no longer works, or could not be read
		body  []byte // what the read that saw the change read, if it read the body
		tag   string
	)
	h.check = func(ctx context.Context, by wake) (bool, error) {
		if by == wakeFirst && !recheck {
			return false, nil
		}
		if ended = s.consoleEnded(ctx, r); ended != nil {
			return true, nil
		}
		if by == wakeAlso {
			return false, nil
		}
		b, t, err := read(ctx, false)
		if err != nil {
			return false, err
		}
		body, tag = b, t
		return !etagMatches(seen, t), nil
	}
	h.answer = func(w http.ResponseWriter, r *http.Request, changed bool) {
		if !changed {
			ended = s.consoleEnded(r.Context(), r)
		}
		if ended != nil {
			s.answerConsoleEnded(w, r, ended)
			return
		}
		if !changed || body == nil {
			var err error
			if body, tag, err = read(r.Context(), true); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		writeConsoleRead(w, body, tag)
	}
	s.holdRead(w, r, h)
}

// writeConsoleRead answers 200 with a console read's body and its ETag.
func writeConsoleRead(w http.ResponseWriter, body []byte, tag string) {
	w.Header().Set("ETag", tag)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// handleConsoleRecord serves an agreement's signed record to the console,
// as the participant route serves it: the stored bytes, their SHA-256 in
// the ETag.
func (s *Server) handleConsoleRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := s.venue.ConsoleRecord(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "agreementId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeRecord(w, rec.SHA256, rec.Body)
}

// handleConsoleArtifact serves an agreement's CONSENSUS.md to the console,
// as the participant route serves it: the same bytes and headers.
func (s *Server) handleConsoleArtifact(w http.ResponseWriter, r *http.Request) {
	art, err := s.venue.ConsoleArtifact(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "agreementId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeArtifact(w, r, art)
}
