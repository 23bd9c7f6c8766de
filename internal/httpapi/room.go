package httpapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/venue"
)

// The room is the hot read: its body is written from the pieces the venue
// keeps encoded per version, joined once per version (roomShared), after a
// head of the reader's own. Its members come in RoomView's order, which
// puts the shared part last: the head goes into net/http's buffer and the
// shared part follows it, so a large room leaves in the same two writes
// as any body of its size, with no small write of a tail after it.

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
// from the revision's value to the room's closing brace.
func roomShared(p venue.SharedPieces) []byte {
	const revisions, roster, events, end = `,"revisions":`, `,"roster":`, `,"events":[`, `]}`
	b := make([]byte, 0, len(p.Revision)+len(revisions)+len(p.Revisions)+len(roster)+len(p.Roster)+len(events)+len(p.Events)+len(end))
	b = append(b, p.Revision...)
	b = append(b, revisions...)
	b = append(b, p.Revisions...)
	b = append(b, roster...)
	b = append(b, p.Roster...)
	b = append(b, events...)
	b = append(b, p.Events...)
	return append(b, end...)
}

// roomHead is the reader's own members, which open the room after its ids.
type roomHead struct {
	You        venue.You           `json:"you"`
	Outcome    venue.OutcomeView   `json:"outcome"`
	Blocking   []venue.BlockerView `json:"blocking"`
	Rule       venue.RuleView      `json:"decisionRule"`
	ChainHead  string              `json:"chainHead"`
	Deadline   string              `json:"deadline"`
	Artifact   *venue.ArtifactMeta `json:"artifact"`
	ServerTime string              `json:"serverTime"`
}

// roomHeads recycles the buffers heads are written into; one that grew
// past maxPooledHead (a room with a long list of blockers) is dropped.
var roomHeads = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledHead = 16 << 10

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
	head := roomHeads.Get().(*bytes.Buffer)
	defer func() {
		if head.Cap() <= maxPooledHead {
			head.Reset()
			roomHeads.Put(head)
		}
	}()
	var id [36]byte
	head.WriteString(`{"agreementId":"`)
	putUUID(id[:], room.AgreementID)
	head.Write(id[:])
	head.WriteString(`","invitationId":"`)
	putUUID(id[:], room.InvitationID)
	head.Write(id[:])
	head.WriteByte('"')
	open := head.Len()
	enc := json.NewEncoder(head)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(roomHead{room.You, room.Outcome, room.Blocking, room.DecisionRule, room.ChainHead, canon.FormatSeconds(room.Deadline),
		room.Artifact, canon.FormatTime(room.ServerTime)}); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	// The members continue the room's object: the encoded object's "{"
	// becomes a comma, and its "}\n" gives way to the shared members.
	b := head.Bytes()
	b[open] = ','
	head.Truncate(len(b) - 2)
	head.WriteString(`,"revision":`)
	shared := room.Shared(roomShared)
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(head.Len()+len(shared)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head.Bytes()); err == nil {
		_, _ = w.Write(shared)
	}
}
