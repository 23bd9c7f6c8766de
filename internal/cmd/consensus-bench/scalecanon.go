package main

import (
	"strconv"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// The scale load's canonical bytes: the RFC 8785 forms of a command and a
// binding, and the chain hash, as the service would compute them.

// scaleCommandBytes is the RFC 8785 form of a version 1 command whose
// strings need no escaping (the loader writes only such): its keys in
// sorted order, no whitespace. The test holds it equal to canon.DigestOf.
func scaleCommandBytes(c room.Command) []byte {
	b := make([]byte, 0, 512+len(c.Body))
	str := func(s string) {
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	b = append(b, `{"action":`...)
	str(c.Action)
	b = append(b, `,"agreement_id":`...)
	str(c.AgreementID)
	b = append(b, `,"body":`...)
	str(c.Body)
	b = append(b, `,"invitation_id":`...)
	str(c.InvitationID)
	b = append(b, `,"participant_id":`...)
	str(c.ParticipantID)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(c.Revision), 10)
	b = append(b, `,"revision_digest":`...)
	str(c.RevisionDigest)
	b = append(b, `,"schema":`...)
	str(c.Schema)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(c.Version), 10)
	return append(b, '}')
}

// scaleBindingBytes is the RFC 8785 form of a binding without a runtime
// endpoint whose strings need no escaping, as scaleCommandBytes writes a
// command. The test holds it equal to canon.DigestOf.
func scaleBindingBytes(bd room.Binding) []byte {
	b := make([]byte, 0, 512)
	str := func(s string) {
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	b = append(b, `{"agreement_id":`...)
	str(bd.AgreementID)
	b = append(b, `,"assurance":`...)
	str(bd.Assurance)
	b = append(b, `,"inbox":`...)
	str(bd.Inbox)
	b = append(b, `,"invitation_id":`...)
	str(bd.InvitationID)
	b = append(b, `,"participant_id":`...)
	str(bd.ParticipantID)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(bd.Revision), 10)
	b = append(b, `,"revision_digest":`...)
	str(bd.RevisionDigest)
	b = append(b, `,"runtime_endpoint":null,"schema":`...)
	str(bd.Schema)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(bd.Version), 10)
	return append(b, '}')
}

// scaleChainHash is the chain link: SHA-256 of the RFC 8785 bytes of
// {command_digest, created_at, prev, seq}.
func scaleChainHash(commandDigest string, at time.Time, prev string, seq int64) string {
	b := make([]byte, 0, 256)
	b = append(b, `{"command_digest":"`...)
	b = append(b, commandDigest...)
	b = append(b, `","created_at":"`...)
	b = append(b, canon.FormatTime(at)...)
	b = append(b, `","prev":"`...)
	b = append(b, prev...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '}')
	return canon.Digest(b)
}
