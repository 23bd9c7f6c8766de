package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// RosterMember is a participant with the counters the hot paths read
// instead of the event history: how many events it stored on a revision,
// and its latest terminal decision.
type RosterMember struct {
	ID          uuid.UUID
	DisplayName string
	Kind        string
	Required    bool
	// State is invited, claimed or decided.
	State     string
	RevokedAt *time.Time
	// EventCount events were stored on revision EventsRevision.
	EventsRevision int
	EventCount     int
	// Decision is the latest terminal event, nil before the first.
	Decision *Decision
}

// Decision is a participant's terminal event as the roster keeps it.
type Decision struct {
	Action   string
	EventID  uuid.UUID
	Seq      int64
	Revision int
	At       time.Time
}

// EventsOn is how many events the member stored on revision rev.
func (m RosterMember) EventsOn(rev int) int {
	if m.EventsRevision != rev {
		return 0
	}
	return m.EventCount
}

// DecisionOn returns the member's decision on revision rev as the decision
// rule sees it, and whether it made one.
func (m RosterMember) DecisionOn(rev int) (room.Event, bool) {
	d := m.Decision
	if d == nil || d.Revision != rev {
		return room.Event{}, false
	}
	return room.Event{ID: d.EventID.String(), Seq: d.Seq, ParticipantID: m.ID.String(), Revision: d.Revision, Action: d.Action, CreatedAt: d.At}, true
}

// Member is the participant as the decision rule sees it.
func (m RosterMember) Member() room.Member {
	return room.Member{ID: m.ID.String(), Required: m.Required}
}

func rosterMemberFrom(r dbsqlc.ParticipantRosterRow) RosterMember {
	return RosterMember{
		ID: r.ID, DisplayName: r.DisplayName, Kind: r.Kind, Required: r.Required, State: r.State, RevokedAt: r.RevokedAt,
		EventsRevision: int(r.EventsRevision), EventCount: int(r.EventCount),
		Decision: decisionFrom(r.Decision, r.DecisionEventID, r.DecisionSeq, r.DecisionRevision, r.DecidedAt),
	}
}

// ruleMemberFrom is a member as the decision rule needs it: who is
// required and its decision.
func ruleMemberFrom(r dbsqlc.ParticipantRuleRow) RosterMember {
	return RosterMember{ID: r.ID, Required: r.Required,
		Decision: decisionFrom(r.Decision, r.DecisionEventID, r.DecisionSeq, r.DecisionRevision, r.DecidedAt)}
}

func decisionFrom(action *string, eventID uuid.NullUUID, seq *int64, rev *int32, at *time.Time) *Decision {
	if action == nil || !eventID.Valid || seq == nil || rev == nil || at == nil {
		return nil
	}
	return &Decision{Action: *action, EventID: eventID.UUID, Seq: *seq, Revision: int(*rev), At: *at}
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
