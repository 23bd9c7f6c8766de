package venue

import (
	"crypto/ed25519"
	"fmt"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// checkSignature judges an event's Consensus-Signature (nil when the header
// was absent) against the key its author bound (nil without one). cmd is
// the room-command/v1 object the service built, key the Idempotency-Key.
// It returns the command the event stores and hashes (cmd for a
// participant without a key; for a keyed one, the room-command/v2 object
// cmd.Signed(origin, key) the signature verifies over) and the raw
// signature to store (nil without a key). v1 reports a signature that
// verifies over cmd itself, as keyed events were signed before version 2:
// it may replay an event stored under key, never store a new one (see
// v1SignatureError). Errors wrap room.ErrSignatureRequired or
// room.ErrBadSignature.
func checkSignature(publicKey []byte, cmd room.Command, origin, key string, sig *string) (stored room.Command, raw []byte, v1 bool, err error) {
	switch {
	case publicKey == nil && sig == nil:
		return cmd, nil, false, nil
	case publicKey == nil:
		return cmd, nil, false, fmt.Errorf("%w: this participant bound no key at claim, so its events are not signed; send no Consensus-Signature (or claim with publicKey and keyProof to sign)", room.ErrBadSignature)
	case sig == nil:
		return cmd, nil, false, room.ErrSignatureRequired
	}
	raw, err = jwk.DecodeSignature(*sig)
	if err != nil {
		return cmd, nil, false, fmt.Errorf("%w: it must be an Ed25519 signature, 64 bytes in unpadded base64url (86 characters)", room.ErrBadSignature)
	}
	signed := cmd.Signed(origin, key)
	switch {
	case len(publicKey) != ed25519.PublicKeySize:
	case ed25519.Verify(publicKey, commandBytes(signed), raw):
		return signed, raw, false, nil
	case ed25519.Verify(publicKey, commandBytes(cmd), raw):
		return cmd, raw, true, nil
	}
	return cmd, nil, false, fmt.Errorf("%w with the key this participant bound, over the RFC 8785 canonical bytes of the room-command/v2 object "+
		"(schema %s, version 2, agreement_id, invitation_id and participant_id of this slot, revision %d, revision_digest %s as bare hex, action %q, body, "+
		"and idempotency_key, the Idempotency-Key header of this request)",
		room.ErrBadSignature, signed.Schema, cmd.Revision, cmd.RevisionDigest, cmd.Action)
}

// v1SignatureError refuses a new event signed over room-command/v1: those
// bytes name no Idempotency-Key, so whoever read the signature in the room
// could post the same command again as another event.
func v1SignatureError(origin string) error {
	return fmt.Errorf("%w: it signs the room-command/v1 object, which new events no longer accept: v1 binds no Idempotency-Key, so the same signature "+
		"could be posted again as another event. Sign the room-command/v2 object instead (schema "+room.RoomCommandV2SchemaFmt+
		", version 2, the v1 fields plus idempotency_key, the Idempotency-Key header of this request)", room.ErrBadSignature, origin)
}

// signatureStoredError refuses a signature its participant already stored
// on another event: a signature speaks for one event.
func signatureStoredError(event uuid.UUID) error {
	return fmt.Errorf("%w: this participant already stored this signature, on event %s; a signature speaks for one event only, so sign the command of this one", room.ErrBadSignature, event)
}
