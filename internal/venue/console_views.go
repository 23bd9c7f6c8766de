package venue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// AgreementTerms is an agreement's current revision as the console shows
// it: the canonical object (what the revision digest covers) and its
// CONSENSUS.md text (what the markdown digest covers).
type AgreementTerms struct {
	Revision json.RawMessage `json:"revision"`
	Markdown string          `json:"markdown"`
}

// ConsoleAgreementDetail is one agreement as the console shows it: the
// operator's view, the terms of the current revision and, of the same
// read, every revision, the conversation and the outcome's files.
type ConsoleAgreementDetail struct {
	*AgreementDetail
	*AgreementTerms
	*ConsoleRoom
}

// GetConsoleAgreement reads an agreement of the call's workspace with its
// terms: one read of the current revision makes both, so they never
// describe two revisions; another workspace's is room.ErrNotFound.
func (v *Venue) GetConsoleAgreement(ctx context.Context, c OperatorCall, agreementID string) (*ConsoleAgreementDetail, error) {
	read, err := v.readAgreement(ctx, c, agreementID, true)
	if err != nil {
		return nil, err
	}
	d, err := v.agreementDetail(read)
	if err != nil {
		return nil, err
	}
	return &ConsoleAgreementDetail{d, &AgreementTerms{Revision: json.RawMessage(read.rev.Canonical), Markdown: read.rev.Markdown},
		consoleRoom(read)}, nil
}

// ConsoleAgreement is one line of the console's agreement list: the
// operator's summary and, while the outcome is pending, who it waits for.
type ConsoleAgreement struct {
	AgreementSummary
	// WaitsFor names the required participants, not revoked, without a
	// decision on the current revision; empty while pending means the
	// decision rule itself (a quorum not yet met by those who decided).
	WaitsFor []string `json:"waitsFor"`
}

// ConsoleAgreementPage is a page of the console's list, newest first.
type ConsoleAgreementPage struct {
	Agreements []ConsoleAgreement `json:"agreements"`
	NextCursor *string            `json:"nextCursor"`
}

// ConsoleAgreements reads a page of the call's workspace's agreements and
// its tag: a digest of what the page shows and of each agreement's
// version, which moves with every event, claim, revocation and amendment,
// so the tag changes whenever any line would. With full unset only the
// tag is computed (one statement), for a held read to compare.
func (v *Venue) ConsoleAgreements(ctx context.Context, c OperatorCall, limit int, cursor string, full bool) (*ConsoleAgreementPage, string, error) {
	page, shown, err := v.listAgreements(ctx, c, limit, cursor)
	if err != nil {
		return nil, "", err
	}
	type line struct {
		AgreementSummary
		Version int64 `json:"v"`
	}
	lines := make([]line, len(shown))
	for i := range shown {
		lines[i] = line{page.Agreements[i], shown[i].Version}
	}
	b, err := json.Marshal(struct {
		L []line  `json:"l"`
		N *string `json:"n"`
	}{lines, page.NextCursor})
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	tag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	if !full {
		return nil, tag, nil
	}
	waits, err := v.waitingFor(ctx, c, shown)
	if err != nil {
		return nil, "", err
	}
	out := &ConsoleAgreementPage{Agreements: make([]ConsoleAgreement, len(page.Agreements)), NextCursor: page.NextCursor}
	for i, a := range page.Agreements {
		out.Agreements[i] = ConsoleAgreement{AgreementSummary: a, WaitsFor: waits[shown[i].ID]}
		if out.Agreements[i].WaitsFor == nil {
			out.Agreements[i].WaitsFor = []string{}
		}
	}
	return out, tag, nil
}

// waitingFor names, for each pending agreement of agreements, the required
// participants, not revoked, whose decision does not count on the current
// revision (none, or one made stale by an amendment), in roster order. It
// reads only what the decision rule needs (the current revision with its
// history, the roster), all in one transaction.
func (v *Venue) waitingFor(ctx context.Context, c OperatorCall, agreements []store.Agreement) (map[uuid.UUID][]string, error) {
	out := map[uuid.UUID][]string{}
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		clear(out) // a retried transaction starts again
		for _, a := range agreements {
			if a.Outcome.Status != room.StatusPending {
				continue
			}
			rev, err := tx.RevisionGet(ctx, a.ID, a.CurrentRevision)
			if err != nil {
				return err
			}
			if rev.History, err = tx.RevisionList(ctx, a.ID); err != nil {
				return err
			}
			roster, err := tx.ParticipantRoster(ctx, a.ID)
			if err != nil {
				return err
			}
			rule, err := ruleOf(a, rev, roster)
			if err != nil {
				return err
			}
			decisions := countedDecisions(rule)
			for _, p := range roster {
				if _, decided := decisions[p.ID]; p.Required && p.RevokedAt == nil && !decided {
					out[a.ID] = append(out[a.ID], p.DisplayName)
				}
			}
		}
		return nil
	})
	return out, err
}

// ConsoleRecord is Record for an operator: the signed record of an
// agreement of the call's workspace, once its outcome is final
// (ErrRecordNotReady before); another workspace's is room.ErrNotFound.
func (v *Venue) ConsoleRecord(ctx context.Context, c OperatorCall, agreementID string) (*store.Record, error) {
	p, err := v.consolePrincipal(ctx, c, agreementID)
	if err != nil {
		return nil, err
	}
	return v.Record(ctx, p)
}

// consolePrincipal reads an agreement of the call's workspace as a
// participant's credential check would, for the participants' reads of
// its outcome; another workspace's is room.ErrNotFound.
func (v *Venue) consolePrincipal(ctx context.Context, c OperatorCall, agreementID string) (*Principal, error) {
	id, err := parseID(agreementID)
	if err != nil {
		return nil, err
	}
	var a store.Agreement
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		if a, err = tx.AgreementGet(ctx, id); err != nil {
			return err
		}
		return ownedBy(c, a.WorkspaceID)
	})
	if err != nil {
		return nil, err
	}
	return &Principal{AgreementID: a.ID, Deadline: a.Deadline, OutcomeStatus: a.Outcome.Status, Version: a.Version, CurrentRevision: a.CurrentRevision}, nil
}
