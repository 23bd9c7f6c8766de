package venue

import (
	"bytes"
	"encoding/json"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/store"
)

// The room cache keeps what it serves encoded, as every response is
// written (encoding/json without HTML escaping): these make the pieces.

func newRevisionBlock(rev store.Revision) (*revisionBlock, error) {
	view, err := encode(RevisionView{Number: rev.Number, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest,
		CanonicalRevision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown})
	if err != nil {
		return nil, err
	}
	return &revisionBlock{Revision: rev, view: view}, nil
}

// encodeEvents encodes events as the room shows them, joined by commas.
func encodeEvents(events []store.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := newEncoder(&buf)
	for i, ev := range events {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(eventView(ev)); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	return buf.Bytes(), nil
}

// encode is JSON as every response is written: no HTML escaping, no
// trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := newEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func newEncoder(buf *bytes.Buffer) *json.Encoder {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc
}

// rosterView is the roster as the room shows it on revision rev.
func rosterView(rev int, roster []store.RosterMember) []RosterEntry {
	out := make([]RosterEntry, len(roster))
	for i, m := range roster {
		out[i] = RosterEntry{ParticipantID: m.ID.String(), DisplayName: m.DisplayName, Kind: m.Kind, Required: m.Required, State: m.State}
		if d, ok := m.DecisionOn(rev); ok {
			out[i].Decision, out[i].DecidedAt = ptr(d.Action), ptr(canon.FormatTime(d.CreatedAt))
		}
	}
	return out
}
