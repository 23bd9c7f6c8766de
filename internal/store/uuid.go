package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// uuidCodec moves github.com/google/uuid values as PostgreSQL's 16 binary
// bytes. Without it pgx sees their sql.Scanner and driver.Valuer methods and
// goes through text: every uuid formatted and parsed again, which the
// profile of an append showed costing more than the decision rule (each
// roster row holds two).
type uuidCodec struct{ pgtype.UUIDCodec }

// registerUUID makes conn use uuidCodec for the uuid type, in arrays too.
func registerUUID(_ context.Context, conn *pgx.Conn) error {
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	conn.TypeMap().RegisterType(t)
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
	return nil
}

// PlanEncode encodes uuid.UUID and uuid.NullUUID in binary; anything else
// as pgtype.UUIDCodec does.
func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case uuid.UUID, uuid.NullUUID:
			return encodeUUID{}
		}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

// PlanScan scans binary uuids into *uuid.UUID and *uuid.NullUUID; anything
// else as pgtype.UUIDCodec does.
func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if format == pgtype.BinaryFormatCode {
		switch target.(type) {
		case *uuid.UUID, *uuid.NullUUID:
			return scanUUID{}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUID struct{}

func (encodeUUID) Encode(value any, buf []byte) ([]byte, error) {
	switch v := value.(type) {
	case uuid.UUID:
		return append(buf, v[:]...), nil
	case uuid.NullUUID:
		if !v.Valid {
			return nil, nil // NULL
		}
		return append(buf, v.UUID[:]...), nil
	}
	return nil, fmt.Errorf("store: cannot encode %T as uuid", value)
}

type scanUUID struct{}

func (scanUUID) Scan(src []byte, target any) error {
	if src != nil && len(src) != 16 {
		return fmt.Errorf("store: a binary uuid of %d bytes", len(src))
	}
	switch t := target.(type) {
	case *uuid.UUID:
		if src == nil {
			return fmt.Errorf("store: NULL scanned into a uuid that cannot be NULL")
		}
		copy(t[:], src)
	case *uuid.NullUUID:
		*t = uuid.NullUUID{Valid: src != nil}
		copy(t.UUID[:], src)
	default:
		return fmt.Errorf("store: cannot scan a uuid into %T", target)
	}
	return nil
}
