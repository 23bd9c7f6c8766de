package room

import (
	"slices"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
)

// Amendment is what an operator changes in revision n+1:
// nil fields keep the current value; Add appends participants to the
// roster (with ids the caller assigned). Existing participants are never
// changed or removed.
type Amendment struct {
	Title     *string
	Objective *string
	Rules     *[]string
	Deadline  *time.Time
	// Rule is the new decision rule; it is part of the terms.
	Rule *Rule
	Add  []Participant
}

// Change says what a new revision changed, for the room's history, the
// emails to participants and the agent runtime.
type Change struct {
	Title, Objective, Rules bool
	// Rule reports that the decision rule changed.
	Rule bool
	// Terms reports that the terms digest changed: every earlier decision
	// is stale.
	Terms bool
	// Deadline is set when the deadline moved; PreviousDeadline is the one it replaced.
	Deadline         bool
	PreviousDeadline string
	Added            []Participant
}

// Empty reports whether the revision would change nothing.
func (c Change) Empty() bool {
	return !c.Title && !c.Objective && !c.Rules && !c.Rule && !c.Deadline && len(c.Added) == 0
}

// Amend returns revision n+1 of prev with a applied, locked at lockedAt, and
// what changed. The caller parsed the deadline (ParseDeadline) and checked
// the added participants' own fields and addresses. It returns
// *ValidationError when the text breaks the limits, the roster would exceed
// MaxParticipants, or nothing would change. Whether the outcome still
// allows a revision is the caller's check (it is read under the lock).
func Amend(prev Revision, a Amendment, lockedAt time.Time) (Revision, Change, error) {
	next := prev
	next.Revision = prev.Revision + 1
	next.LockedAt = canon.FormatSeconds(lockedAt)
	next.Rules = append([]string{}, prev.Rules...)
	next.Participants = append([]Participant{}, prev.Participants...)
	var c Change
	if a.Title != nil {
		c.Title = *a.Title != prev.Title
		next.Title = *a.Title
	}
	if a.Objective != nil {
		c.Objective = *a.Objective != prev.Objective
		next.Objective = *a.Objective
	}
	if a.Rules != nil {
		next.Rules = append([]string{}, *a.Rules...)
		c.Rules = !slices.Equal(next.Rules, prev.Rules)
	}
	if a.Rule != nil {
		c.Rule = *a.Rule != prev.DecisionRule
		next.DecisionRule = *a.Rule
	}
	if a.Deadline != nil {
		next.Deadline = canon.FormatSeconds(*a.Deadline)
		if next.Deadline != prev.Deadline {
			c.Deadline, c.PreviousDeadline = true, prev.Deadline
		}
	}
	if err := validateAmendment(prev, a); err != nil {
		return Revision{}, Change{}, err
	}
	if len(prev.Participants)+len(a.Add) > MaxParticipants {
		return Revision{}, Change{}, invalid("participants", "the roster would have %d participants; at most %d", len(prev.Participants)+len(a.Add), MaxParticipants)
	}
	next.Participants = append(next.Participants, a.Add...)
	c.Added = append([]Participant{}, a.Add...)
	if c.Rule || len(c.Added) > 0 {
		// k is checked against the roster the new revision will have
		if err := next.DecisionRule.Validate(RequiredCount(next)); err != nil {
			return Revision{}, Change{}, err
		}
	}
	if c.Empty() {
		return Revision{}, Change{}, invalid("", "the revision would change nothing: send a new title, objective, rules, decision rule or deadline, or participants to add")
	}
	before, err := TermsDigest(prev)
	if err != nil {
		return Revision{}, Change{}, err
	}
	after, err := TermsDigest(next)
	if err != nil {
		return Revision{}, Change{}, err
	}
	c.Terms = before != after
	return next, c, nil
}

// validateAmendment checks the text a revision changes, with the limits of
// a new agreement. What it keeps is not checked again: a revision locked
// under older rules stays amendable.
func validateAmendment(prev Revision, a Amendment) error {
	if a.Title != nil && *a.Title != prev.Title {
		if err := ValidateLine("title", *a.Title, 1, MaxTitle); err != nil {
			return err
		}
	}
	if a.Objective != nil && *a.Objective != prev.Objective {
		if err := ValidateMultiline("objective", *a.Objective, 1, MaxObjective); err != nil {
			return err
		}
	}
	if a.Rules != nil && !slices.Equal(*a.Rules, prev.Rules) {
		return validateRules(*a.Rules)
	}
	return nil
}
