package room

// Reasons a participant appears in the room's blocking list.
const (
	// ReasonNotClaimed: a required participant that has not claimed its slot.
	ReasonNotClaimed = "not-claimed"
	// ReasonNoDecision: a required participant that claimed but has not decided.
	ReasonNoDecision = "no-decision"
	// ReasonStaleDecision: a required participant whose only decision was
	// made on a revision with other terms; it must decide again.
	ReasonStaleDecision = "stale-decision"
	// ReasonDecided: a participant whose decision settled a final outcome.
	ReasonDecided = "decided"
)

// Blocker is one participant in the blocking list.
type Blocker struct {
	ParticipantID string
	Reason        string
	// Decision is the decision behind the reason: the counted one for
	// decided, the stale one for stale-decision; nil otherwise.
	Decision *Event
}

// Blocking says who stands between the room and consensus, in roster
// order, given the outcome in force:
//   - pending: every required participant whose decision is missing or
//     stale, with its reason;
//   - reached: the required participants whose agreements decided it;
//   - disagreed, no_consensus: the participant whose decision settled it,
//     and under a quorum every required participant whose disagreement or
//     abstention counts (together they put the quorum out of reach);
//   - expired: the required participants that were silent (no decision that
//     counts, made before the deadline), with their reasons. The expired
//     outcome carries the same list as blockedBy.
func (h History) Blocking(o Outcome) []Blocker {
	st := h.Standings()
	counted := map[string]Event{}
	for _, e := range h.counted(st) {
		counted[e.ParticipantID] = e
	}
	out := []Blocker{}
	for _, m := range h.Roster {
		if !m.Required {
			continue
		}
		e, decided := counted[m.ID]
		switch o.Status {
		case StatusPending, StatusExpired:
			if !decided {
				out = append(out, silent(m, st))
			}
		case StatusReached:
			if decided && e.Action == ActionAgree {
				out = append(out, Blocker{ParticipantID: m.ID, Reason: ReasonDecided, Decision: &e})
			}
		case StatusDisagreed:
			if decided && (e.ID == o.DecidingEventID || h.Rule.IsQuorum() && e.Action != ActionAgree) {
				out = append(out, Blocker{ParticipantID: m.ID, Reason: ReasonDecided, Decision: &e})
			}
		default:
			if decided && e.ID == o.DecidingEventID {
				out = append(out, Blocker{ParticipantID: m.ID, Reason: ReasonDecided, Decision: &e})
			}
		}
	}
	return out
}

// silent explains why required member m has no decision that counts.
func silent(m Member, st map[string]Standing) Blocker {
	if s, ok := st[m.ID]; ok && s.Stale {
		e := s.Event
		return Blocker{ParticipantID: m.ID, Reason: ReasonStaleDecision, Decision: &e}
	}
	if !m.Claimed {
		return Blocker{ParticipantID: m.ID, Reason: ReasonNotClaimed}
	}
	return Blocker{ParticipantID: m.ID, Reason: ReasonNoDecision}
}
