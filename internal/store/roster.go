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
	// TokenHash is set only for the participant a read named (whose
	// credential its caller checks), and only once it claimed.
	TokenHash []byte
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
	m := RosterMember{
		ID: r.ID, DisplayName: r.DisplayName, Kind: r.Kind, Required: r.Required, State: r.State, RevokedAt: r.RevokedAt,
		EventsRevision: int(r.EventsRevision), EventCount: int(r.EventCount), TokenHash: r.TokenHash,
	}
	if r.Decision != nil && r.DecisionEventID.Valid && r.DecisionSeq != nil && r.DecisionRevision != nil && r.DecidedAt != nil {
		m.Decision = &Decision{Action: *r.Decision, EventID: r.DecisionEventID.UUID, Seq: *r.DecisionSeq, Revision: int(*r.DecisionRevision), At: *r.DecidedAt}
	}
	return m
}

// rosterStep reads the roster of agreementID into out; the member named
// tokenOf (uuid.Nil: none) comes with its token hash.
func rosterStep(ctx context.Context, agreementID, tokenOf uuid.UUID, out *[]RosterMember) step {
	return func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).ParticipantRoster(ctx, dbsqlc.ParticipantRosterParams{AgreementID: agreementID, ID: tokenOf})
		if err != nil {
			return interpretError("roster", err)
		}
		*out = convert(rows, rosterMemberFrom)
		return nil
	}
}

// ParticipantRoster returns an agreement's roster with its counters, in
// position order, without token hashes.
func (q queries) ParticipantRoster(ctx context.Context, agreementID uuid.UUID) ([]RosterMember, error) {
	rows, err := q.q.ParticipantRoster(ctx, dbsqlc.ParticipantRosterParams{AgreementID: agreementID, ID: uuid.Nil})
	if err != nil {
		return nil, interpretError("roster", err)
	}
	return convert(rows, rosterMemberFrom), nil
}
