package room

import "slices"

// Addressing: a question or a change request may name the participants it
// asks (to), and a comment may answer one (inReplyTo). Both travel in the
// command, so the command digest, the event chain and a participant's
// signature cover them, and a record shows them.
//
// An event addressed to a participant awaits its reply until that
// participant posts a later comment whose inReplyTo names it. A decision
// does not answer it: agreeing says nothing about what was asked. Another
// participant's reply does not answer it for the addressee either. Once the
// outcome is final the room accepts no more events, so nothing awaits
// anyone's reply there.

// MaxAddressees is the most participants one event may name in to: the
// most a roster holds.
const MaxAddressees = MaxParticipants

// CanAddress reports whether an event of action may carry to.
func CanAddress(action string) bool {
	return action == ActionQuestion || action == ActionChangeRequest
}

// CanReply reports whether an event of action may carry inReplyTo.
func CanReply(action string) bool { return action == ActionComment }

// ValidateAddressing checks the syntax of to and inReplyTo for an event of
// action: to only on a question or change request, 1 to MaxAddressees
// distinct participant ids when present; inReplyTo only on a comment, one
// event id. Ids are lowercase canonical UUIDs. A nil slice or pointer is
// absent; an empty slice present is refused. Errors are *ValidationError
// naming the member at fault.
func ValidateAddressing(action string, to []string, inReplyTo *string) error {
	if to != nil {
		switch {
		case !CanAddress(action):
			return invalid("to", "is allowed on a question or change_request only, not on %q", action)
		case len(to) == 0:
			return invalid("to", "must name at least one participant id when present; omit it to ask the whole room")
		case len(to) > MaxAddressees:
			return invalid("to", "names %d participants; at most %d", len(to), MaxAddressees)
		}
		seen := make(map[string]bool, len(to))
		for i, id := range to {
			if !IsUUID(id) {
				return invalid("to", "item %d must be a participant id (a lowercase UUID)", i)
			}
			if seen[id] {
				return invalid("to", "item %d repeats participant %s", i, id)
			}
			seen[id] = true
		}
	}
	if inReplyTo != nil {
		switch {
		case !CanReply(action):
			return invalid("inReplyTo", "is allowed on a comment only, not on %q", action)
		case !IsUUID(*inReplyTo):
			return invalid("inReplyTo", "must be the id of a question or change_request of this room (a lowercase UUID)")
		}
	}
	return nil
}

// CheckAddressees checks to against the room: every id names a
// participant on the current revision's roster (members) other than the
// sender.
func CheckAddressees(to []string, sender string, members []string) error {
	// A roster holds at most MaxParticipants: a scan of it costs less than
	// building a set, which most events, addressing nobody, would not use.
	for i, id := range to {
		switch {
		case id == sender:
			return invalid("to", "item %d is you: address other participants", i)
		case !slices.Contains(members, id):
			return invalid("to", "item %d, %s, is not on the roster of the revision the event is posted on", i, id)
		}
	}
	return nil
}

// CheckReplyTarget checks what inReplyTo names, as the room holds it:
// found reports that an event with that id exists in this room, action is
// its action.
func CheckReplyTarget(found bool, action string) error {
	switch {
	case !found:
		return invalid("inReplyTo", "names no event of this room")
	case !CanAddress(action):
		return invalid("inReplyTo", "names a %s; a reply answers a question or change_request", action)
	}
	return nil
}

// Note is what the addressing rule reads of an event: only events with to
// or inReplyTo matter to it.
type Note struct {
	ID            string
	Seq           int64
	ParticipantID string
	Action        string
	To            []string
	InReplyTo     string
}

// Matters reports whether the note changes what awaits a reply.
func (n Note) Matters() bool { return len(n.To) > 0 || n.InReplyTo != "" }

// AwaitingReply returns the ids, in seq order, of the events in notes
// addressed to reader that reader has not answered: no later comment of
// reader names them in inReplyTo. A final outcome awaits nothing. notes
// may hold any events of the room, in any order.
func AwaitingReply(notes []Note, reader string, outcome Outcome) []string {
	if outcome.Final() {
		return nil
	}
	answered := map[string]int64{} // question id -> seq of reader's first reply
	for _, n := range notes {
		if n.ParticipantID == reader && n.InReplyTo != "" {
			if s, ok := answered[n.InReplyTo]; !ok || n.Seq < s {
				answered[n.InReplyTo] = n.Seq
			}
		}
	}
	var out []Note
	for _, n := range notes {
		if !CanAddress(n.Action) || !addresses(n.To, reader) {
			continue
		}
		if s, ok := answered[n.ID]; ok && s > n.Seq {
			continue
		}
		out = append(out, n)
	}
	ids := make([]string, len(out))
	for i, n := range bySeqNotes(out) {
		ids[i] = n.ID
	}
	return ids
}

func addresses(to []string, reader string) bool {
	for _, id := range to {
		if id == reader {
			return true
		}
	}
	return false
}

func bySeqNotes(ns []Note) []Note {
	for i := 1; i < len(ns); i++ {
		for j := i; j > 0 && ns[j].Seq < ns[j-1].Seq; j-- {
			ns[j], ns[j-1] = ns[j-1], ns[j]
		}
	}
	return ns
}

// IsUUID reports whether s is a UUID in its canonical lowercase form.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
