package room

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	pa = "00000000-0000-4000-8000-00000000000a"
	pb = "00000000-0000-4000-8000-00000000000b"
	pc = "00000000-0000-4000-8000-00000000000c"
	q1 = "00000000-0000-4000-8000-000000000101"
	q2 = "00000000-0000-4000-8000-000000000102"
)

func field(err error) string {
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Field
	}
	return ""
}

func TestValidateAddressing(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxAddressees+1)
	for i := range many {
		many[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name      string
		action    string
		to        []string
		inReplyTo *string
		field     string // "" when valid
	}{
		{"nothing", ActionComment, nil, nil, ""},
		{"question to one", ActionQuestion, []string{pa}, nil, ""},
		{"change request to two", ActionChangeRequest, []string{pa, pb}, nil, ""},
		{"as many as a roster holds", ActionQuestion, many[:MaxAddressees], nil, ""},
		{"comment replying", ActionComment, nil, s(q1), ""},
		{"to on a comment", ActionComment, []string{pa}, nil, "to"},
		{"to on a decision", ActionAgree, []string{pa}, nil, "to"},
		{"empty to", ActionQuestion, []string{}, nil, "to"},
		{"too many", ActionQuestion, many, nil, "to"},
		{"repeated", ActionQuestion, []string{pa, pb, pa}, nil, "to"},
		{"uppercase id", ActionQuestion, []string{strings.ToUpper(pa)}, nil, "to"},
		{"not an id", ActionQuestion, []string{"alice"}, nil, "to"},
		{"reply on a question", ActionQuestion, nil, s(q1), "inReplyTo"},
		{"reply on a decision", ActionDisagree, nil, s(q1), "inReplyTo"},
		{"reply to no id", ActionComment, nil, s("q1"), "inReplyTo"},
		{"reply to empty", ActionComment, nil, s(""), "inReplyTo"},
	} {
		err := ValidateAddressing(tc.action, tc.to, tc.inReplyTo)
		if got := field(err); got != tc.field || (err == nil) != (tc.field == "") {
			t.Errorf("%s: error %v (field %q), want field %q", tc.name, err, got, tc.field)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not match ErrInvalid", tc.name, err)
		}
	}
}

func TestCheckAddressees(t *testing.T) {
	t.Parallel()
	members := []string{pa, pb, pc}
	if err := CheckAddressees([]string{pb, pc}, pa, members); err != nil {
		t.Fatal(err)
	}
	if err := CheckAddressees([]string{pb, pa}, pa, members); field(err) != "to" || !strings.Contains(err.Error(), "item 1 is you") {
		t.Errorf("addressing oneself: %v", err)
	}
	if err := CheckAddressees([]string{q1}, pa, members); field(err) != "to" || !strings.Contains(err.Error(), q1) {
		t.Errorf("a stranger: %v", err)
	}
	if err := CheckAddressees(nil, pa, members); err != nil {
		t.Errorf("addressing nobody: %v", err)
	}
	// A full roster and a long list.
	large := []string{pa}
	for i := range MaxParticipants - 1 {
		large = append(large, fmt.Sprintf("p-%03d", i))
	}
	to := large[20:40]
	if err := CheckAddressees(to, pa, large); err != nil {
		t.Fatal(err)
	}
	if err := CheckAddressees(append(slices.Clone(to), q1), pa, large); field(err) != "to" || !strings.Contains(err.Error(), "item 20, "+q1) {
		t.Errorf("a stranger among many: %v", err)
	}
	if err := CheckAddressees(append(slices.Clone(to), pa), pa, large); field(err) != "to" || !strings.Contains(err.Error(), "item 20 is you") {
		t.Errorf("oneself among many: %v", err)
	}
}

func TestCheckReplyTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		found  bool
		action string
		ok     bool
	}{
		{true, ActionQuestion, true}, {true, ActionChangeRequest, true},
		{false, "", false}, {true, ActionComment, false}, {true, ActionAgree, false},
	} {
		if err := CheckReplyTarget(tc.found, tc.action); (err == nil) != tc.ok || (err != nil && field(err) != "inReplyTo") {
			t.Errorf("found %v, %s: %v", tc.found, tc.action, err)
		}
	}
}

func TestAwaitingReply(t *testing.T) {
	t.Parallel()
	pending, reached := Outcome{Status: StatusPending}, Outcome{Status: StatusReached, DecidedAt: time.Unix(1, 0)}
	question := func(seq int64, id, from string, to ...string) Note {
		return Note{ID: id, Seq: seq, ParticipantID: from, Action: ActionQuestion, To: to}
	}
	reply := func(seq int64, from, to string) Note {
		return Note{ID: fmt.Sprintf("r%d", seq), Seq: seq, ParticipantID: from, Action: ActionComment, InReplyTo: to}
	}
	for _, tc := range []struct {
		name    string
		notes   []Note
		reader  string
		outcome Outcome
		want    []string
	}{
		{"none", nil, pb, pending, nil},
		{"addressed, unanswered", []Note{question(1, q1, pa, pb)}, pb, pending, []string{q1}},
		{"not addressed to the reader", []Note{question(1, q1, pa, pc)}, pb, pending, nil},
		{"the asker awaits nothing", []Note{question(1, q1, pa, pb)}, pa, pending, nil},
		{"one of several addressees", []Note{question(1, q1, pa, pb, pc)}, pc, pending, []string{q1}},
		{"answered", []Note{question(1, q1, pa, pb), reply(2, pb, q1)}, pb, pending, nil},
		{"answered in any order given", []Note{reply(2, pb, q1), question(1, q1, pa, pb)}, pb, pending, nil},
		{"another's reply does not answer for the reader", []Note{question(1, q1, pa, pb, pc), reply(2, pc, q1)}, pb, pending, []string{q1}},
		{"... but does for the one who replied", []Note{question(1, q1, pa, pb, pc), reply(2, pc, q1)}, pc, pending, nil},
		{"a reply to another question", []Note{question(1, q1, pa, pb), question(2, q2, pa, pb), reply(3, pb, q2)}, pb, pending, []string{q1}},
		{"in seq order", []Note{question(5, q2, pa, pb), question(1, q1, pc, pb)}, pb, pending, []string{q1, q2}},
		{"change requests too", []Note{{ID: q1, Seq: 1, ParticipantID: pa, Action: ActionChangeRequest, To: []string{pb}}}, pb, pending, []string{q1}},
		{"a final outcome awaits nothing", []Note{question(1, q1, pa, pb)}, pb, reached, nil},
		{"a reply before the question (impossible in a room) does not answer", []Note{reply(1, pb, q1), question(2, q1, pa, pb)}, pb, pending, []string{q1}},
	} {
		got := AwaitingReply(tc.notes, tc.reader, tc.outcome)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAwaitingReplyProperties: over every small history, an event awaits
// the reader exactly when it is addressed to it and no later reply of the
// reader names it; answering never adds anything.
func TestAwaitingReplyProperties(t *testing.T) {
	t.Parallel()
	people := []string{pa, pb, pc}
	pending := Outcome{Status: StatusPending}
	// Each step: who posts, and either a question to one other or a reply
	// to the first question.
	var walk func(notes []Note, depth int)
	walk = func(notes []Note, depth int) {
		for _, reader := range people {
			got := AwaitingReply(notes, reader, pending)
			want := map[string]bool{}
			for _, n := range notes {
				if n.Action == ActionQuestion && addresses(n.To, reader) {
					want[n.ID] = true
				}
			}
			for _, n := range notes {
				if n.ParticipantID == reader && n.InReplyTo != "" {
					for _, q := range notes {
						if q.ID == n.InReplyTo && q.Seq < n.Seq {
							delete(want, q.ID)
						}
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%v reader %s: %v, want %v", notes, reader, got, want)
			}
			for _, id := range got {
				if !want[id] {
					t.Fatalf("%v reader %s: %v, want %v", notes, reader, got, want)
				}
			}
		}
		if depth == 0 {
			return
		}
		seq := int64(len(notes) + 1)
		for _, from := range people {
			for _, to := range people {
				if to != from {
					walk(append(notes[:len(notes):len(notes)], Note{ID: fmt.Sprintf("q%d", seq), Seq: seq, ParticipantID: from, Action: ActionQuestion, To: []string{to}}), depth-1)
				}
			}
			for _, q := range notes {
				if q.Action == ActionQuestion {
					walk(append(notes[:len(notes):len(notes)], Note{ID: fmt.Sprintf("c%d", seq), Seq: seq, ParticipantID: from, Action: ActionComment, InReplyTo: q.ID}), depth-1)
				}
			}
		}
	}
	walk(nil, 4)
}

func TestIsUUID(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{pa: true, strings.ToUpper(pa): false, "": false, pa[:35]: false, pa + "0": false, strings.ReplaceAll(pa, "-", "x"): false} {
		if IsUUID(s) != want {
			t.Errorf("IsUUID(%q) = %v", s, !want)
		}
	}
}
