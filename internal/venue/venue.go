// Package venue is the application layer of Consensus: each exported method
// of Venue is one use case (create an agreement, exchange an invitation,
// claim a slot, read the room, post an event, fetch the artifact, operate).
// It checks credentials, applies the domain rules of package room inside
// store transactions, and builds the results the HTTP layer serializes.
package venue

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/translog"
)

// SessionLifetime bounds a session token; it never outlives the invitation.
const SessionLifetime = 20 * time.Minute

// Credential schemes, one per stage.
const (
	SchemeInvite      = "Consensus-Invite"
	SchemeSession     = "Consensus-Session"
	SchemeParticipant = "Consensus-Participant"
)

// ErrUnauthorized: the caller's credential does not admit it. Every
// *UnauthorizedError matches it with errors.Is.
var ErrUnauthorized = errors.New("a valid credential is required")

// UnauthorizedError means the route's credential is missing, expired,
// revoked, of another kind or for another invitation. Scheme is the one the
// route accepts, for WWW-Authenticate. A missing and a wrong credential are
// the same error, so their answers cannot be told apart.
type UnauthorizedError struct{ Scheme string }

// Error names the credential the route accepts, never the one presented.
func (e *UnauthorizedError) Error() string {
	return "a valid " + e.Scheme + " credential for this invitation is required"
}

// Is reports whether target is ErrUnauthorized.
func (e *UnauthorizedError) Is(target error) bool { return target == ErrUnauthorized }

// ErrArtifactNotReady: the artifact exists only once the outcome is reached.
var ErrArtifactNotReady = errors.New("the artifact exists only after the outcome is reached")

// Venue holds what every use case needs.
type Venue struct {
	Store *store.Store
	// Batch, when set, runs the appends and token lookups of concurrent
	// requests together (package batch); nil runs each alone on Store.
	Batch  *batch.Batcher
	Keys   *secret.Keys
	Origin string
	Now    func() time.Time
	// Signer is the service's Ed25519 key: it signs records (and is
	// published with every key before it at /.well-known/consensus-keys).
	Signer ed25519.PrivateKey
	// LogSigner signs the transparency log's checkpoints; nil keeps no log.
	LogSigner *translog.Signer
	// RoomCacheBytes bounds the memory the room cache keeps (encoded
	// revisions, events, rosters and artifacts); zero means
	// DefaultRoomCacheBytes.
	RoomCacheBytes int

	// Webhooks is how webhook endpoints are checked when registered.
	Webhooks WebhookPolicy

	// ReplyAddress, when set, is the mailbox replies to invitations go to:
	// invitations then say how to decide by replying (reply.go).
	ReplyAddress string

	cacheOnce sync.Once
	cache     *roomCache

	refreshOnce sync.Once
	refresher   *roomRefresher
}

func (v *Venue) now() time.Time { return v.Now().UTC() }

// append runs one append through Batch when the venue has one.
func (v *Venue) append(ctx context.Context, req store.AppendRequest, decide store.Decide) (any, error) {
	if v.Batch != nil {
		return v.Batch.Append(ctx, req, decide)
	}
	return v.Store.Append(ctx, req, decide)
}

// tokenOwner finds the owner of a participant token by its hash, through
// Batch when the venue has one.
func (v *Venue) tokenOwner(ctx context.Context, tokenHash []byte) (store.TokenOwner, error) {
	if v.Batch != nil {
		return v.Batch.TokenOwner(ctx, tokenHash)
	}
	return v.Store.ParticipantGetByTokenHash(ctx, tokenHash)
}

// rooms is the venue's room cache, made on first use.
func (v *Venue) rooms() *roomCache {
	v.cacheOnce.Do(func() { v.cache = newRoomCache(v.RoomCacheBytes) })
	return v.cache
}

// parseID parses a UUID from a path; anything malformed is not found.
func parseID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || id.String() != s {
		return uuid.Nil, room.ErrNotFound
	}
	return id, nil
}

func ptr[T any](v T) *T { return &v }
