package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/venue"
)

// The console's WebAuthn ceremonies: enrollment with a link, and sign-in
// with a passkey; each ends by setting the session cookie (signedIn).

type enrollBeginInput struct {
	Token string `json:"token"`
}

type enrollFinishInput struct {
	CeremonyID  string          `json:"ceremonyId"`
	Token       string          `json:"token"`
	DisplayName string          `json:"displayName"`
	Credential  json.RawMessage `json:"credential"`
}

type signInFinishInput struct {
	CeremonyID string          `json:"ceremonyId"`
	Credential json.RawMessage `json:"credential"`
}

// limitCeremony bounds a WebAuthn response (attestation objects are a few
// kilobytes).
var limitCeremony = bodyLimit{Bytes: 64 << 10, Wire: 64 << 10}

// readCeremony decodes a ceremony body with encoding/json: a passkey's
// response is the browser's JSON, whose members the decoder must not judge.
func readCeremony(r *http.Request, dst any) error {
	if err := checkContentType(r); err != nil {
		return err
	}
	b, err := readBody(r, limitCeremony)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		return malformed("the body must be the JSON object the console sends")
	}
	return nil
}

func (s *Server) handleEnrollBegin(w http.ResponseWriter, r *http.Request) {
	var in enrollBeginInput
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.EnrollBegin(r.Context(), in.Token)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleEnrollFinish(w http.ResponseWriter, r *http.Request) {
	var in enrollFinishInput
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.EnrollFinish(r.Context(), in.CeremonyID, in.Token, in.DisplayName, in.Credential, consoleCall(r))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.signedIn(w, r, out)
}

func (s *Server) handleSignInBegin(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.SignInBegin(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSignInFinish(w http.ResponseWriter, r *http.Request) {
	var in signInFinishInput
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.SignInFinish(r.Context(), in.CeremonyID, in.Credential, consoleCall(r))
	if errors.Is(err, venue.ErrUnauthorized) {
		s.writeProblem(w, r, &Error{Code: ProblemUnauthorized, Detail: "this passkey does not sign in to any workspace of this service", Challenge: consoleChallenge})
		return
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.signedIn(w, r, out)
}

// An operator's own passkeys: listed, added with a registration ceremony
// of their session, removed (never the last).

func (s *Server) handlePasskeyList(w http.ResponseWriter, r *http.Request) {
	out, err := s.venue.ListPasskeys(r.Context(), operatorFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handlePasskeyBegin(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.PasskeyBegin(r.Context(), operatorFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handlePasskeyFinish(w http.ResponseWriter, r *http.Request) {
	var in signInFinishInput // a ceremony id and the browser's credential
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.PasskeyFinish(r.Context(), operatorFrom(r.Context()), in.CeremonyID, in.Credential)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handlePasskeyRemove(w http.ResponseWriter, r *http.Request) {
	if err := s.venue.RemovePasskey(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "passkeyId")); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
