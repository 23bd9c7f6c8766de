package secret

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/google/uuid"
)

// replyTagMAC is how many bytes of the MAC a reply tag keeps: 80 bits, so a
// guessed tag for a known invitation id succeeds once in 2^80 tries.
const replyTagMAC = 10

// replyTagEncoding is lower-case base32 without padding: mail systems may
// fold the case of a local part, and base32 reads the same either way.
var replyTagEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ReplyTag names an invitation in a reply address: its id followed by a
// keyed MAC of the id, 42 characters of base32. It holds neither the
// invitation's secret nor its proof.
func (k *Keys) ReplyTag(invitationID uuid.UUID) string {
	b := append(invitationID[:], k.replyMAC(invitationID)...)
	return replyTagEncoding.EncodeToString(b)
}

// ReplyInvitation reads a tag ReplyTag made and returns its invitation id;
// ok is false for a tag this key did not make (the MAC is compared in
// constant time).
func (k *Keys) ReplyInvitation(tag string) (id uuid.UUID, ok bool) {
	b, err := replyTagEncoding.DecodeString(strings.ToLower(tag))
	if err != nil || len(b) != len(id)+replyTagMAC {
		return uuid.Nil, false
	}
	copy(id[:], b)
	if !hmac.Equal(b[len(id):], k.replyMAC(id)) {
		return uuid.Nil, false
	}
	return id, true
}

func (k *Keys) replyMAC(id uuid.UUID) []byte {
	m := hmac.New(sha256.New, k.replyTag)
	m.Write([]byte("reply-to "))
	m.Write(id[:])
	return m.Sum(nil)[:replyTagMAC]
}
