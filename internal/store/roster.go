package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// RuleMember is a participant as the decision rule reads it: who is
// required, and its standing decision (room.Standing): the terminal event
// that counts on the current revision or, when none does, the latest one;
// nil before the first. An append keeps it; a new revision recomputes it
// from the history (ParticipantSetDecision).
type RuleMember struct {
	ID       uuid.UUID
	Required bool
	Decision *Decision
	// PublicKey is the Ed25519 key the participant bound at claim, nil
	// without one; read by the append's roster only (ParticipantRule), so
	// that CONSENSUS.md can name the key of each signed decision.
	PublicKey []byte
}

// RosterMember is a participant with the counters the hot paths read
// instead of the event history: how many events it stored on a revision,
// and its standing decision.
type RosterMember struct {
	RuleMember
	DisplayName string
	Kind        string
	// State is invited, claimed or decided.
	State     string
	RevokedAt *time.Time
	// EventCount events were stored on revision EventsRevision.
	EventsRevision int
	EventCount     int
}

// Decision is a participant's terminal event as the roster keeps it.
type Decision struct {
	Action   string
	EventID  uuid.UUID
	Seq      int64
	Revision int
	At       time.Time
	// Evidence is the event's reply evidence (room.Event.Evidence), empty
	// for a decision posted over HTTP.
	Evidence string
}

// EventsOn is how many events the member stored on revision rev.
func (m RosterMember) EventsOn(rev int) int {
	if m.EventsRevision != rev {
		return 0
	}
	return m.EventCount
}

// DecisionEvent returns the member's standing decision as the decision
// rule sees it, on whatever revision it was made, and whether it made one.
// Whether it counts on the current revision is the rule's to say
// (room.History): a revision may have changed the terms since.
func (m RuleMember) DecisionEvent() (room.Event, bool) {
	d := m.Decision
	if d == nil {
		return room.Event{}, false
	}
	return room.Event{ID: d.EventID.String(), Seq: d.Seq, ParticipantID: m.ID.String(), Revision: d.Revision, Action: d.Action, CreatedAt: d.At, Evidence: d.Evidence}, true
}

// Member is the participant as the decision rule sees it (whether it
// claimed is not known here: see RosterMember.Member).
func (m RuleMember) Member() room.Member {
	return room.Member{ID: m.ID.String(), Required: m.Required}
}

// Member is the participant as the decision rule sees it, with whether it
// claimed its slot (which only explains why it blocks).
func (m RosterMember) Member() room.Member {
	return room.Member{ID: m.ID.String(), Required: m.Required, Claimed: m.State == "claimed" || m.State == "decided"}
}

func rosterMemberFrom(r dbsqlc.ParticipantRosterRow) RosterMember {
	return RosterMember{
		RuleMember:  RuleMember{ID: r.ID, Required: r.Required, Decision: decisionFrom(r.Decision, r.DecisionEventID, r.DecisionSeq, r.DecisionRevision, r.DecidedAt, r.DecisionEvidence)},
		DisplayName: r.DisplayName, Kind: r.Kind, State: r.State, RevokedAt: r.RevokedAt,
		EventsRevision: int(r.EventsRevision), EventCount: int(r.EventCount),
	}
}

// ruleMembersFrom are the members as the decision rule needs them: who is
// required and each decision (an empty action: none yet). The arrays are
// parallel; any other shape is a fault of the query.
func ruleMembersFrom(r dbsqlc.ParticipantRuleRow) ([]RuleMember, error) {
	n := len(r.Ids)
	if len(r.Required) != n || len(r.Decisions) != n || len(r.DecisionEventIds) != n || len(r.DecisionSeqs) != n ||
		len(r.DecisionRevisions) != n || len(r.DecidedAt) != n || len(r.DecisionEvidences) != n || len(r.PublicKeys) != n {
		return nil, errors.New("store: roster arrays of different lengths")
	}
	out := make([]RuleMember, n)
	for i := range out {
		out[i] = RuleMember{ID: r.Ids[i], Required: r.Required[i]}
		if len(r.PublicKeys[i]) > 0 {
			out[i].PublicKey = r.PublicKeys[i]
		}
		if r.Decisions[i] != "" {
			out[i].Decision = &Decision{Action: r.Decisions[i], EventID: r.DecisionEventIds[i], Seq: r.DecisionSeqs[i],
				Revision: int(r.DecisionRevisions[i]), At: r.DecidedAt[i], Evidence: r.DecisionEvidences[i]}
		}
	}
	return out, nil
}

func decisionFrom(action *string, eventID uuid.NullUUID, seq *int64, rev *int32, at *time.Time, evidence *string) *Decision {
	if action == nil || !eventID.Valid || seq == nil || rev == nil || at == nil {
		return nil
	}
	return &Decision{Action: *action, EventID: eventID.UUID, Seq: *seq, Revision: int(*rev), At: *at, Evidence: deref(evidence)}
}

// rosterStep reads the roster of agreementID into out.
func rosterStep(ctx context.Context, agreementID uuid.UUID, out *[]RosterMember) step {
	return func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).ParticipantRoster(ctx, agreementID)
		if err != nil {
			return interpretError("roster", err)
		}
		*out = convert(rows, rosterMemberFrom)
		return nil
	}
}

// ParticipantRoster returns an agreement's roster with its counters, in
// position order.
func (q queries) ParticipantRoster(ctx context.Context, agreementID uuid.UUID) ([]RosterMember, error) {
	rows, err := q.q.ParticipantRoster(ctx, agreementID)
	if err != nil {
		return nil, interpretError("roster", err)
	}
	return convert(rows, rosterMemberFrom), nil
}
