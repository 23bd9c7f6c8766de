package venue

import (
	"bytes"
	"encoding/json"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// The room cache keeps what it serves encoded, as every response is
// written (encoding/json without HTML escaping): these make the pieces.

// newRevisionBlock encodes rev, which must come with its History.
func newRevisionBlock(rev store.Revision) (*revisionBlock, error) {
	if len(rev.History) < rev.Number {
		return nil, errNoHistory
	}
	view, err := encode(RevisionView{Number: rev.Number, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest,
		TermsDigest: rev.TermsDigest, CanonicalRevision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown})
	if err != nil {
		return nil, err
	}
	history, err := encode(revisionsView(rev.History[:rev.Number]))
	if err != nil {
		return nil, err
	}
	var parsed struct {
		Participants []room.Participant `json:"participants"`
	}
	if err := json.Unmarshal(rev.Canonical, &parsed); err != nil {
		return nil, err
	}
	members := make([]string, len(parsed.Participants))
	for i, m := range parsed.Participants {
		members[i] = m.ParticipantID
	}
	return &revisionBlock{Revision: rev, view: view, history: history, members: members}, nil
}

// encodeEvents encodes events as the room shows them, joined by commas, and
// returns where each one ends in the joined bytes.
func encodeEvents(events []store.Event) ([]byte, []int, error) {
	var buf bytes.Buffer
	enc := newEncoder(&buf)
	ends := make([]int, 0, len(events))
	for i, ev := range events {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(eventView(ev)); err != nil {
			return nil, nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		ends = append(ends, buf.Len())
	}
	return buf.Bytes(), ends, nil
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
