package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// SigningKey is a service key that has run: its RFC 7638 thumbprint and
// raw Ed25519 public key.
type SigningKey struct {
	Kid       string
	PublicKey []byte
	CreatedAt time.Time
}

// SigningKeyRegister records k unless its kid is already known.
func (q queries) SigningKeyRegister(ctx context.Context, k SigningKey) error {
	return interpretError("register signing key", q.q.SigningKeyRegister(ctx, dbsqlc.SigningKeyRegisterParams{
		Kid: k.Kid, PublicKey: k.PublicKey, CreatedAt: k.CreatedAt,
	}))
}

// SigningKeyList returns every service key that has run, oldest first.
func (q queries) SigningKeyList(ctx context.Context) ([]SigningKey, error) {
	rows, err := q.q.SigningKeyList(ctx)
	if err != nil {
		return nil, interpretError("list signing keys", err)
	}
	return convert(rows, func(r dbsqlc.SigningKey) SigningKey {
		return SigningKey{Kid: r.Kid, PublicKey: r.PublicKey, CreatedAt: r.CreatedAt}
	}), nil
}

// Record is an issued consensus-record/v1: its exact bytes, their SHA-256,
// the key that signed it and when.
type Record struct {
	AgreementID uuid.UUID
	Body        []byte
	SHA256      string
	Kid         string
	IssuedAt    time.Time
}

// RecordInsert stores r unless the agreement already has a record (then
// nothing changes; read it back with RecordGet).
func (q queries) RecordInsert(ctx context.Context, r Record) error {
	return interpretError("insert record", q.q.RecordInsert(ctx, dbsqlc.RecordInsertParams{
		AgreementID: r.AgreementID, Body: r.Body, Sha256: r.SHA256, Kid: r.Kid, IssuedAt: r.IssuedAt,
	}))
}

// RecordGet reads the agreement's record, or room.ErrNotFound.
func (q queries) RecordGet(ctx context.Context, agreementID uuid.UUID) (Record, error) {
	r, err := q.q.RecordGet(ctx, agreementID)
	if err != nil {
		return Record{}, interpretError("get record", err)
	}
	return Record{AgreementID: r.AgreementID, Body: r.Body, SHA256: r.Sha256, Kid: r.Kid, IssuedAt: r.IssuedAt}, nil
}
