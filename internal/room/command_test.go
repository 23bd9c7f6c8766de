package room

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateCommand(t *testing.T) {
	t.Parallel()
	emoji4000 := strings.Repeat("😀", 4000)
	cases := []struct {
		action, body string
		ok           bool
	}{
		{ActionComment, "hello", true},
		{ActionQuestion, "x", true},
		{ActionChangeRequest, emoji4000, true},
		{ActionComment, emoji4000 + "a", false},
		{ActionComment, strings.Repeat("a", 4000), true},
		{ActionComment, strings.Repeat("a", 4001), false},
		{ActionComment, "", false},
		{ActionComment, "bad \x00 nul", false},
		{ActionComment, "\xff", false},
		{ActionAgree, "", true},
		{ActionDisagree, "", true},
		{ActionAbstain, "", true},
		{ActionAgree, "I agree", false},
		{"approve", "", false},
		{"", "", false},
		{"Agree", "", false},
	}
	for _, c := range cases {
		err := ValidateCommand(c.action, c.body)
		if (err == nil) != c.ok {
			t.Errorf("ValidateCommand(%q, %d bytes) = %v", c.action, len(c.body), err)
		}
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Errorf("error %v is not a ValidationError", err)
		}
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	t.Parallel()
	for k, ok := range map[string]bool{
		"abcdefgh": true, "A.b_c:d-9": true, strings.Repeat("k", 128): true,
		"short": false, "abcdefg": false, strings.Repeat("k", 129): false,
		"has space": false, "slash/notok": false, "ümlautxx": false, "": false, "abcdefgh\n": false,
	} {
		if ValidIdempotencyKey(k) != ok {
			t.Errorf("ValidIdempotencyKey(%q) != %v", k, ok)
		}
	}
}

func TestAdmitOrder(t *testing.T) {
	t.Parallel()
	roster := []Member{{ID: "a", Required: true}, {ID: "b", Required: true}, {ID: "o"}}
	base := Snapshot{Revision: 1, RevisionDigest: "d", Deadline: deadline, Roster: roster}
	cmd := func(who, action string) Command {
		return Command{ParticipantID: who, Revision: 1, RevisionDigest: "d", Action: action}
	}
	closed := base
	closed.Events = []Event{ev(1, "a", ActionDisagree)}
	decided := base
	decided.Events = []Event{ev(1, "a", ActionAgree)}
	full := decided
	full.ParticipantEvents = MaxEventsPerParticipant
	// Read without the roster (a comment cannot decide): only the stored
	// outcome says the room is closed.
	storedClosed := Snapshot{Revision: 1, RevisionDigest: "d", Deadline: deadline,
		Stored: &Outcome{Status: StatusDisagreed, DecidedAt: t0, DecidingEventID: "e1"}}
	storedPending := Snapshot{Revision: 1, RevisionDigest: "d", Deadline: deadline, Stored: &Outcome{Status: StatusPending}}
	cases := []struct {
		name string
		s    Snapshot
		c    Command
		now  time.Time
		want error
	}{
		{"ok", base, cmd("a", ActionAgree), t0, nil},
		{"stale revision", base, Command{ParticipantID: "a", Revision: 2, RevisionDigest: "d", Action: ActionAgree}, t0, ErrRevisionMismatch},
		{"wrong digest", base, Command{ParticipantID: "a", Revision: 1, RevisionDigest: "x", Action: ActionAgree}, t0, ErrRevisionMismatch},
		{"revision before closed", closed, Command{ParticipantID: "b", Revision: 1, RevisionDigest: "x", Action: ActionAgree}, t0, ErrRevisionMismatch},
		{"closed", closed, cmd("b", ActionComment), t0, ErrRoomClosed},
		{"expired is closed", base, cmd("a", ActionComment), deadline, ErrRoomClosed},
		{"already decided", decided, cmd("a", ActionDisagree), t0, ErrAlreadyDecided},
		{"advisory after own decision", decided, cmd("a", ActionComment), t0, nil},
		{"limit", full, cmd("a", ActionComment), t0, ErrEventLimit},
		{"stored final closes", storedClosed, cmd("a", ActionComment), t0, ErrRoomClosed},
		{"revision before stored final", storedClosed, Command{ParticipantID: "a", Revision: 1, RevisionDigest: "x", Action: ActionComment}, t0, ErrRevisionMismatch},
		{"stored pending is open", storedPending, cmd("a", ActionComment), t0, nil},
		{"stored pending past the deadline", storedPending, cmd("a", ActionComment), deadline, ErrRoomClosed},
		{"already decided before limit", full, cmd("a", ActionAgree), t0, ErrAlreadyDecided},
		{"optional decides too", decided, cmd("o", ActionAbstain), t0, nil},
	}
	for _, c := range cases {
		if _, err := Admit(c.s, c.c, c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v want %v", c.name, err, c.want)
		}
	}
}
