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

// The room is the hot read: its body is written from the pieces the venue
// keeps encoded per version, joined once per version (roomShared), between
// a head and a tail of the reader's own. Its members come in RoomView's
// order.

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
// from the revision's value to the comma after the events' array.
func roomShared(p venue.SharedPieces) []byte {
	const revisions, roster, events, end = `,"revisions":`, `,"roster":`, `,"events":[`, `],`
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

// roomTail is the reader's own members that close the room.
type roomTail struct {
	You        venue.You           `json:"you"`
	Outcome    venue.OutcomeView   `json:"outcome"`
	Blocking   []venue.BlockerView `json:"blocking"`
	Rule       venue.RuleView      `json:"decisionRule"`
	ChainHead  string              `json:"chainHead"`
	Deadline   string              `json:"deadline"`
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
	var tail bytes.Buffer
	enc := json.NewEncoder(&tail)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(roomTail{room.You, room.Outcome, room.Blocking, room.DecisionRule, room.ChainHead, canon.FormatSeconds(room.Deadline),
		room.Artifact, canon.FormatTime(room.ServerTime)}); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var head [len(`{"agreementId":"`) + 36 + len(`","invitationId":"`) + 36 + len(`","revision":`)]byte
	n := copy(head[:], `{"agreementId":"`)
	n += putUUID(head[n:], room.AgreementID)
	n += copy(head[n:], `","invitationId":"`)
	n += putUUID(head[n:], room.InvitationID)
	copy(head[n:], `","revision":`)
	shared := room.Shared(roomShared)
	body := tail.Bytes()[1:] // the tail's members continue the room's object; Encode ends them with a newline
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(head)+len(shared)+len(body)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head[:]); err == nil {
		if _, err := w.Write(shared); err == nil {
			_, _ = w.Write(body)
		}
	}
}
