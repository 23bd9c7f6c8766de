package venue

import (
	"crypto/ed25519"
	"fmt"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// checkSignature judges an event's Consensus-Signature (nil when the header
// was absent) against the key its author bound (nil without one), over the
// canonical bytes of cmd, the room-command/v1 object the service built. It
// returns the raw signature to store: nil for a participant without a key.
// Errors wrap room.ErrSignatureRequired or room.ErrBadSignature.
func checkSignature(publicKey []byte, cmd room.Command, sig *string) ([]byte, error) {
	switch {
	case publicKey == nil && sig == nil:
		return nil, nil
	case publicKey == nil:
		return nil, fmt.Errorf("%w: this participant bound no key at claim, so its events are not signed; send no Consensus-Signature (or claim with publicKey and keyProof to sign)", room.ErrBadSignature)
	case sig == nil:
		return nil, room.ErrSignatureRequired
	}
	raw, err := jwk.DecodeSignature(*sig)
	if err != nil {
		return nil, fmt.Errorf("%w: it must be an Ed25519 signature, 64 bytes in unpadded base64url (86 characters)", room.ErrBadSignature)
	}
	if len(publicKey) != ed25519.PublicKeySize || !ed25519.Verify(publicKey, commandBytes(cmd), raw) {
		return nil, fmt.Errorf("%w with the key this participant bound, over the RFC 8785 canonical bytes of the room-command/v1 object "+
			"(schema %s, version 1, agreement_id, invitation_id and participant_id of this slot, revision %d, revision_digest %s as bare hex, action %q and body)",
			room.ErrBadSignature, cmd.Schema, cmd.Revision, cmd.RevisionDigest, cmd.Action)
	}
	return raw, nil
}
