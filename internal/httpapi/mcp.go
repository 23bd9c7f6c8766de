package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/mcpfacade"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// requireParticipantToken is requireParticipant for a route without an
// invitation in its path: the token names its invitation.
func (s *Server) requireParticipantToken(next http.Handler) http.Handler {
	return authenticate(s, venue.SchemeParticipant, participantKey{}, func(ctx context.Context, _, token string) (*venue.Principal, error) {
		return s.authAgentToken(ctx, token)
	}, next)
}

// authAgentToken looks up a participant token on /mcp. /mcp is an agent's
// way into its room, as the agent routes are: a person's token is refused
// like a token of the other kind there.
func (s *Server) authAgentToken(ctx context.Context, token string) (*venue.Principal, error) {
	p, err := s.venue.AuthParticipantToken(ctx, token)
	if err == nil && p.Kind != room.KindAgent {
		return nil, &venue.UnauthorizedError{Scheme: venue.SchemeParticipant}
	}
	return p, err
}

// mcpExchangeKey carries the HTTP exchange a tool call arrived in, for the
// tool that is held (wait_for_change).
type mcpExchangeKey struct{}

type mcpExchange struct {
	w http.ResponseWriter
	r *http.Request
}

// mcpContext is the context the MCP handler runs in: the values of the
// request's (the principal, the request id), the cancellation of the
// request itself without the database deadline, which the facade puts on
// each tool call instead (Options.Bound) and which a held call outlives.
type mcpContext struct {
	context.Context // the request's own, unbounded
	values          context.Context
}

func (c mcpContext) Value(key any) any { return c.values.Value(key) }

// mcpWait holds wait_for_change as a held read of the room is held: joined
// to the live hub, checking the token again on each wake-up, for up to
// wait. It returns the freshest principal and whether the room changed.
func (s *Server) mcpWait(ctx context.Context, p *venue.Principal, tag venue.RoomTag, wait time.Duration) (*venue.Principal, bool, error) {
	x, ok := ctx.Value(mcpExchangeKey{}).(mcpExchange)
	if !ok {
		return nil, false, errors.New("httpapi: a held MCP tool call outside an MCP request")
	}
	waiter, err := s.hub.Join(p.AgreementID, p.ParticipantID)
	if err != nil {
		return nil, false, err
	}
	defer waiter.Leave()
	holdDeadline(x.w, wait+holdSlack)
	token := credential(x.r, venue.SchemeParticipant)
	h := &heldRead{wait: wait, on: waiter}
	s.watchRoom(h, &p, tag, true, func(context.Context, *venue.Principal) (*venue.Principal, error) {
		fresh, cancel := s.freshDatabase(x.r)
		defer cancel()
		return s.authAgentToken(fresh, token)
	})
	changed, err := s.await(ctx, h)
	if err != nil {
		return nil, false, err
	}
	return p, changed, nil
}

// refusal describes err for a tool result with the row of the problem
// table the REST route would answer with.
func (s *Server) refusal(ctx context.Context, err error) mcpfacade.Refusal {
	c, detail, _, _ := problemCodeFor(err)
	pt := problemTypes[c]
	if pt.Status >= 500 {
		s.log.ErrorContext(ctx, "mcp tool failed", slog.String("request_id", requestID(ctx)), slog.String("error", err.Error()))
	}
	retry, _ := strconv.Atoi(retryAfterOf(c))
	return mcpfacade.Refusal{Code: pt.Code, Status: pt.Status, Title: pt.Title, Detail: detail,
		Type: s.origin + "/problems/" + pt.Code, Explanation: pt.Explanation, RetryAfter: retry}
}

// mcpWriter keeps the SDK's answers inside the contract: JSON carries its
// charset, nothing is stored by a cache, and the SDK's plain-text HTTP errors (a wrong Accept or
// Content-Type, a body too large, malformed JSON-RPC) become the problem
// answers every other route gives.
type mcpWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	wrote   bool
	refused bool
}

func (w *mcpWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	h := w.Header()
	ct := h.Get("Content-Type")
	if code >= 400 && strings.HasPrefix(ct, "text/plain") {
		w.refused = true
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		var err error
		switch code {
		case http.StatusRequestEntityTooLarge:
			err = tooLarge(bodyLimit{Bytes: mcpfacade.MaxRequestBytes, Wire: mcpfacade.MaxRequestBytes})
		case http.StatusUnsupportedMediaType:
			err = &Error{Code: ProblemUnsupportedMediaType, Detail: "Content-Type must be application/json"}
		case http.StatusBadRequest:
			err = malformed("the MCP request is malformed: send one JSON-RPC message as JSON, with Accept: application/json, text/event-stream")
		default:
			err = &Error{Code: ProblemInternal, Detail: "the MCP handler answered HTTP " + http.StatusText(code)}
		}
		w.s.writeProblem(w.ResponseWriter, w.r, err)
		return
	}
	if ct == "application/json" {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	// The SDK marks its answers no-cache; room content is private: no-store.
	h.Set("Cache-Control", "no-store")
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.refused {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the SDK's streamed answers.
func (w *mcpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
