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
// returns where each one ends in the joined bytes. The bytes are made once,
// to a size estimated from the events, with at most an eighth to spare (as
// roomFor grows the cache's): the room cache keeps them as they are. A
// reconnecting crowd reads hundreds of rooms whole at once, and a buffer
// grown by doubling, then copied into the cache, had allocated three times
// what it kept (issue 30: 108 MB of growth and 44 MB of copies, of 730 MB
// allocated in the 8 s that 4,000 listeners took to attach).
func encodeEvents(events []store.Event) ([]byte, []int, error) {
	buf := bytes.NewBuffer(make([]byte, 0, encodedSizeOf(events)))
	enc := newEncoder(buf)
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
	out := buf.Bytes()
	if cap(out)-len(out) > len(out)/8 {
		// The estimate missed (bodies escaped at length, say): what the
		// cache keeps is not left with the spare room of a buffer grown
		// past it.
		out = append(roomFor([]byte(nil), len(out)), out...)
	}
	return out, ends, nil
}

// eventFixedSize is a little over what an event's JSON takes besides its
// body, evidence, recipients and signature: the keys, two ids, two hashes,
// the time, the action and seq (about 360 bytes).
const eventFixedSize = 400

// encodedSizeOf estimates the joined JSON of events, a little over.
func encodedSizeOf(events []store.Event) int {
	n := 0
	for _, ev := range events {
		n += eventFixedSize + len(ev.Body) + len(ev.Evidence) + 40*len(ev.To) + 1
		if ev.Signature != nil {
			n += 4 * len(ev.Signature) / 3
		}
	}
	return n
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
