package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// parseEvidence reads stored evidence strictly.
func parseEvidence(s string) (*Evidence, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	var e Evidence
	if err := d.Decode(&e); err != nil {
		return nil, errors.New("the stored evidence does not parse")
	}
	return &e, nil
}

// checkEvidence re-checks offline the DKIM evidence of every event read
// from a reply (Evidence.Check). A record without such events reports
// nothing here.
func (v *verification) checkEvidence() {
	n := len(v.rep.Failed)
	count := 0
	for i, e := range v.rec.Events {
		if e.Evidence == nil {
			continue
		}
		count++
		if e.Command.Action == "question" || e.Command.Action == "change_request" {
			v.rep.fail(CheckReplyEvidence, "event %d (seq %d): a reply records only decisions and comments, not %s", i+1, e.Seq, e.Command.Action)
		}
		if err := e.Evidence.Check(); err != nil {
			v.rep.fail(CheckReplyEvidence, "event %d (seq %d): %v", i+1, e.Seq, err)
		}
	}
	if count > 0 && !v.rep.failedSince(n, CheckReplyEvidence) {
		v.rep.pass(CheckReplyEvidence, "%s read from replies: each DKIM signature verifies over its signed header fields with the key record stored, and aligns with its From", plural(count, "event"))
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkMessages ties each raw reply message given to the event whose
// evidence names its SHA-256.
func (v *verification) checkMessages(messages [][]byte) {
	n := len(v.rep.Failed)
	for i, raw := range messages {
		found := false
		for _, e := range v.rec.Events {
			if e.Evidence != nil && e.Evidence.CheckRaw(raw) == nil {
				found = true
				break
			}
		}
		if !found {
			v.rep.fail(CheckReplyEvidence, "message %d: its SHA-256 is the raw_sha256 of no event's evidence", i+1)
		}
	}
	if len(messages) > 0 && !v.rep.failedSince(n, CheckReplyEvidence) {
		v.rep.pass(CheckReplyEvidence, "%s given: each is the raw message of an event's evidence", plural(len(messages), "message"))
	}
}
