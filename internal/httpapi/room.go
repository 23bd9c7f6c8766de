package httpapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/venue"
)

// The room is the hot read: its body is a small head of the reader's own
// members, then the members every reader of the version shares, joined
// once per version (roomShared) from the pieces the venue keeps. Its
// members come in RoomView's order, which puts the shared ones last: the
// head goes into net/http's buffer and the shared bytes follow it, so a
// room leaves in the same two writes as any body of its size, and the
// blocking list of a large room is encoded once per version, not per read.

// roomETag is the strong ETag of a room tag: its hex, quoted.
func roomETag(t venue.RoomTag) string {
	var b [2 + 2*len(t)]byte
	b[0] = '"'
	hex.Encode(b[1:], t[:])
	b[len(b)-1] = '"'
	return string(b[:])
}

// putUUID writes id in its canonical 36-character form, as uuid.UUID's
// String does but without allocating, and returns 36.
func putUUID(b []byte, id uuid.UUID) int {
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], id[10:16])
	return 36
}

// roomShared joins the members every reader of a version is served alike,
// from the outcome to the room's closing brace.
func roomShared(p venue.SharedPieces) []byte {
	var lead bytes.Buffer
	// Encoding these values cannot fail: they hold strings, numbers and
	// slices of them.
	_ = writeMembers(&lead, sharedLead{p.Outcome, p.Blocking, p.DecisionRule, p.ChainHead, canon.FormatSeconds(p.Deadline)})
	members := [...]struct {
		name  string
		value []byte
	}{{`,"revision":`, p.Revision}, {`,"revisions":`, p.Revisions}, {`,"roster":`, p.Roster}, {`,"events":[`, p.Events}}
	// The result is kept with the version, as long as the room is cached:
	// it is made at its exact size, not with a growing buffer's spare half.
	n := lead.Len() + len(`]}`)
	for _, m := range members {
		n += len(m.name) + len(m.value)
	}
	b := make([]byte, 0, n)
	b = append(b, lead.Bytes()...)
	for _, m := range members {
		b = append(append(b, m.name...), m.value...)
	}
	return append(b, `]}`...)
}

// writeMembers writes the members of v's JSON object (no HTML escaping),
// without its braces: a run of members to continue another object with.
func writeMembers(b *bytes.Buffer, v any) error {
	start := b.Len()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	obj := b.Bytes()[start:]
	n := copy(obj, obj[1:len(obj)-2]) // past "{", before "}\n"
	b.Truncate(start + n)
	return nil
}

// sharedLead is the shared members that are values, not encoded pieces.
type sharedLead struct {
	Outcome   venue.OutcomeView   `json:"outcome"`
	Blocking  []venue.BlockerView `json:"blocking"`
	Rule      venue.RuleView      `json:"decisionRule"`
	ChainHead string              `json:"chainHead"`
	Deadline  string              `json:"deadline"`
}

// roomHead is the reader's own members, which open the room after its ids.
type roomHead struct {
	You        venue.You           `json:"you"`
	Artifact   *venue.ArtifactMeta `json:"artifact"`
	ServerTime string              `json:"serverTime"`
}

// writeRoom writes the room with status 200, or 304 when inm matches its
// ETag.
func (s *Server) writeRoom(w http.ResponseWriter, r *http.Request, room *venue.RoomParts, inm string) {
	etag := roomETag(room.Tag)
	h := w.Header()
	h.Set("ETag", etag)
	if inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var head bytes.Buffer
	head.Grow(512) // the ids, you, artifact and serverTime: one allocation, not five
	var id [36]byte
	head.WriteString(`{"agreementId":"`)
	putUUID(id[:], room.AgreementID)
	head.Write(id[:])
	head.WriteString(`","invitationId":"`)
	putUUID(id[:], room.InvitationID)
	head.Write(id[:])
	head.WriteString(`",`)
	if err := writeMembers(&head, roomHead{room.You, room.Artifact, canon.FormatTime(room.ServerTime)}); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	head.WriteByte(',')
	shared := room.Shared(roomShared)
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(head.Len()+len(shared)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head.Bytes()); err == nil {
		_, _ = w.Write(shared)
	}
}
