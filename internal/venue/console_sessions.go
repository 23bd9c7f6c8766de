package venue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// A console session is kept in the database, so that it can be ended at
// once on every replica.
const (
	// ConsoleIdle ends a console session that made no request for so long.
	ConsoleIdle = 12 * time.Hour
	// touchEvery is how often a session's last use is written.
	touchEvery = time.Minute
	// PrefixConsole marks a console session's token, so that a leaked one
	// is recognizable.
	PrefixConsole = "coc_"
)

// ConsoleSignIn is a console session just started: its token, for the
// cookie only, and who signed in.
type ConsoleSignIn struct {
	Token      string
	OperatorID string
	Call       OperatorCall
}

func operatorPrincipal(op store.Operator) workspace.Principal {
	name := op.Email
	if op.DisplayName != "" {
		name = op.DisplayName + " <" + op.Email + ">"
	}
	return workspace.Principal{WorkspaceID: op.WorkspaceID, Actor: workspace.Actor{Kind: workspace.ActorOperator, ID: op.ID.String(), Name: name}, Scopes: workspace.RoleScopes(op.Role)}
}

// ConsoleSession is a signed-in console request: the call it makes and
// what the console shows of who makes it.
type ConsoleSession struct {
	Call          OperatorCall
	Operator      OperatorView
	WorkspaceName string
	TokenHash     []byte
}

// AuthConsole resolves a console session token. It reads the database on
// every request, so a removal, a change of role or a sign-out counts at
// once on every replica. A session idle for ConsoleIdle ends. Anything
// but a live session is ErrUnauthorized.
func (v *Venue) AuthConsole(ctx context.Context, token string) (*ConsoleSession, error) {
	if !strings.HasPrefix(token, PrefixConsole) {
		return nil, ErrUnauthorized
	}
	h := secret.Hash(token)
	s, err := v.Store.ConsoleSessionGet(ctx, h)
	if errors.Is(err, room.ErrNotFound) {
		return nil, ErrUnauthorized
	}
	if err != nil {
		return nil, err
	}
	if !secret.Equal(h, s.TokenHash) || s.Operator.RemovedAt != nil {
		return nil, ErrUnauthorized
	}
	now := v.now()
	if now.Sub(s.LastSeenAt) >= ConsoleIdle {
		if err := v.Store.ConsoleSessionDelete(ctx, h); err != nil {
			return nil, err
		}
		return nil, ErrUnauthorized
	}
	if now.Sub(s.LastSeenAt) >= touchEvery {
		if err := v.Store.ConsoleSessionTouch(ctx, h, canon.Now(now)); err != nil {
			return nil, err
		}
	}
	return &ConsoleSession{Call: OperatorCall{Principal: operatorPrincipal(s.Operator)}, Operator: operatorView(s.Operator, nil, now),
		WorkspaceName: s.WorkspaceName, TokenHash: h}, nil
}

// SignOut ends a console session and records it.
func (v *Venue) SignOut(ctx context.Context, s *ConsoleSession, c OperatorCall) error {
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		if err := tx.ConsoleSessionDelete(ctx, s.TokenHash); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorSignOut, map[string]string{"operatorId": s.Operator.ID})
	})
	if err != nil {
		return fmt.Errorf("venue: sign out: %w", err)
	}
	return nil
}

// ConsoleSweep deletes idle console sessions and expired ceremonies.
func (v *Venue) ConsoleSweep(ctx context.Context) error {
	now := v.now()
	return v.Store.ConsoleSweep(ctx, now.Add(-ConsoleIdle), now)
}
