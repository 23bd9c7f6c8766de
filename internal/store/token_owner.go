package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// lookupConns is the size of the pool TokenOwners runs on: its caller on
// the hot path (the token lookups of package batch) sends one statement at
// a time.
const lookupConns = 1

// lookupPool opens the connections TokenOwners runs on, on cfg's server and
// settings. PostgreSQL plans a prepared statement for each execution until
// the plan for any values looks no dearer, and a list of tokens of unknown
// length never does: planned each time, a lookup cost about four times as
// much. Here the generic plan is always used; no other statement runs on
// these connections.
func lookupPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	cfg = cfg.Copy()
	cfg.MaxConns, cfg.MinConns = lookupConns, 0
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return pool, nil
}

// TokenOwners finds the owners of participant tokens by their hashes, in
// one statement: owners[i] becomes the owner of hashes[i], or stays zero
// (ParticipantID uuid.Nil) when nobody holds that token. owners must be as
// long as hashes. It reads the database on every call.
func (s *Store) TokenOwners(ctx context.Context, hashes [][]byte, owners []TokenOwner) error {
	if len(owners) != len(hashes) {
		return fmt.Errorf("store: %d token owners for %d tokens", len(owners), len(hashes))
	}
	clear(owners)
	rows, err := s.lookup.ParticipantAuth(ctx, hashes)
	if err != nil {
		return interpretError("get participant by token", err)
	}
	found := make(map[string]*dbsqlc.ParticipantAuthRow, len(rows))
	for i := range rows {
		found[string(rows[i].TokenHash)] = &rows[i]
	}
	for i, h := range hashes {
		if r := found[string(h)]; r != nil {
			owners[i] = TokenOwner{
				ParticipantID: r.ID, AgreementID: r.AgreementID, InvitationID: r.InvitationID, TokenHash: r.TokenHash, RevokedAt: r.RevokedAt, Kind: r.Kind,
				Version: r.Version, CurrentRevision: int(r.CurrentRevision), Deadline: r.Deadline, OutcomeStatus: r.OutcomeStatus,
			}
		}
	}
	return nil
}

// ParticipantGetByTokenHash finds the owner of a participant token by the
// token's hash, or room.ErrNotFound: TokenOwners for one token.
func (s *Store) ParticipantGetByTokenHash(ctx context.Context, tokenHash []byte) (TokenOwner, error) {
	var owners [1]TokenOwner
	if err := s.TokenOwners(ctx, [][]byte{tokenHash}, owners[:]); err != nil {
		return TokenOwner{}, err
	}
	if owners[0].ParticipantID == uuid.Nil {
		return TokenOwner{}, room.ErrNotFound
	}
	return owners[0], nil
}
