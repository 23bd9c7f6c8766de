package main

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
)

// The scale load's generator: the rows of one room, the same for the same
// spec and index, so a test can regenerate a room to know its tokens.

// scaleBody is the text of event seq of agreement i: ASCII without
// characters RFC 8785 escapes, about as long as a short rationale.
func scaleBody(i int, seq int64) string {
	return "Scale comment " + strconv.FormatInt(seq, 10) + " in loaded agreement " + strconv.Itoa(i+1) +
		": the rollout plan was reviewed, the rollback rehearsed, and the remaining risk is written down for the record."
}

// agreement generates agreement i. The same spec and index always give the
// same rows: a test regenerates a room to know its tokens and events.
func (s scaleSpec) agreement(i int, keys *secret.Keys) (*scaleAgreement, error) {
	rng := rand.New(rand.NewPCG(s.Seed, uint64(i)))
	newID := func() uuid.UUID {
		var id uuid.UUID
		binary.BigEndian.PutUint64(id[:8], rng.Uint64())
		binary.BigEndian.PutUint64(id[8:], rng.Uint64())
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		return id
	}
	hash32 := func() []byte {
		var b [32]byte
		for k := 0; k < 4; k++ {
			binary.BigEndian.PutUint64(b[8*k:], rng.Uint64())
		}
		return b[:]
	}
	a := &scaleAgreement{Index: i, ID: newID(), Workspace: s.workspaceID(i % s.Workspaces)}
	// Created one after another over the weeks before now, a few minutes
	// apart; every room is still pending, its deadline ahead.
	step := 40 * 24 * time.Hour / time.Duration(max(s.Agreements, 1))
	created := canon.Now(s.Now.Add(-40*24*time.Hour + time.Duration(i)*step))
	lockedAt := created.Truncate(time.Second)
	deadline := s.Now.Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)

	rev := room.Revision{
		Schema: fmt.Sprintf(room.AgreementSchemaFmt, s.Origin), AgreementID: a.ID.String(), Revision: 1,
		Title:        fmt.Sprintf("Loaded agreement %d", i+1),
		Objective:    "Agree on the rollout of the quarterly release across the regions named in the plan.",
		Rules:        []string{"Every region signs off before its traffic moves.", "A failed check stops the rollout."},
		DecisionRule: room.Rule{},
		Deadline:     canon.FormatSeconds(deadline), LockedAt: canon.FormatSeconds(lockedAt), Issuer: s.Origin,
	}
	a.Parts = make([]scaleParticipant, s.Parts)
	for j := range a.Parts {
		a.Parts[j].ID, a.Parts[j].InvitationID = newID(), newID()
		rev.Participants = append(rev.Participants, room.Participant{
			ParticipantID: a.Parts[j].ID.String(), DisplayName: fmt.Sprintf("Loaded agent %d.%d", i+1, j+1),
			Kind: room.KindAgent, Required: j < 2 || s.Parts == 1,
		})
	}
	locked, err := room.Lock(rev)
	if err != nil {
		return nil, err
	}
	a.RevisionDigest = locked.RevisionDigest
	a.revision = []any{a.ID, 1, string(locked.Canonical), locked.Markdown, locked.RevisionDigest, locked.MarkdownDigest, lockedAt, locked.TermsDigest, a.Workspace}

	// The events: participants in turn, one action in five a question.
	prev := canon.ZeroHash
	at := created
	cmdSchema := fmt.Sprintf(room.RoomCommandSchemaFmt, s.Origin)
	for k := 0; k < s.Events; k++ {
		seq := int64(k + 1)
		j := k % s.Parts
		at = at.Add(time.Duration(1+rng.IntN(600)) * time.Second).Add(time.Duration(rng.IntN(1_000_000)) * time.Microsecond)
		action := "comment"
		if k%5 == 4 {
			action = "question"
		}
		e := scaleEvent{ID: newID(), Seq: seq, Participant: j, Action: action, Body: scaleBody(i, seq),
			Key: "scale-" + strconv.Itoa(i+1) + "-" + strconv.FormatInt(seq, 10), CreatedAt: at, Prev: prev}
		e.CommandDigest = canon.Digest(scaleCommandBytes(room.Command{
			Schema: cmdSchema, Version: 1, AgreementID: a.ID.String(), InvitationID: a.Parts[j].InvitationID.String(),
			ParticipantID: a.Parts[j].ID.String(), Revision: 1, RevisionDigest: locked.RevisionDigest, Action: action, Body: e.Body,
		}))
		e.Hash = scaleChainHash(e.CommandDigest, at, prev, seq)
		prev = e.Hash
		a.Parts[j].Events++
		a.Events = append(a.Events, e)
		a.events = append(a.events, []any{e.ID, a.ID, seq, a.Parts[j].ID, 1, action, e.Body, e.Key, e.CommandDigest, at, e.Prev, e.Hash, a.Workspace})
	}
	// Version: 1 at creation, one more per claim and per event.
	version := int64(1 + s.Parts + s.Events)
	a.agreement = []any{a.ID, 1, deadline, "pending", created, version, int64(s.Events), prev, a.Workspace, false}

	for j := range a.Parts {
		p := &a.Parts[j]
		binding := room.Binding{
			Schema: fmt.Sprintf(room.BindingSchemaFmt, s.Origin), Version: 1, AgreementID: a.ID.String(),
			InvitationID: p.InvitationID.String(), ParticipantID: p.ID.String(), Inbox: scaleInbox(i, j),
			Assurance: room.Assurance, Revision: 1, RevisionDigest: locked.RevisionDigest,
		}
		canonical := scaleBindingBytes(binding)
		digest := canon.Digest(canonical)
		p.Binding, p.BindingJSON = binding, string(canonical)
		if keys != nil {
			p.Token = keys.ParticipantToken(digest)
		} else {
			p.Token = secret.PrefixParticipant + hex.EncodeToString(hash32())
		}
		claimedAt := canon.Now(created.Add(time.Duration(j+1) * time.Second))
		a.participants = append(a.participants, []any{
			p.ID, a.ID, j, rev.Participants[j].DisplayName, room.KindAgent, scaleInbox(i, j), rev.Participants[j].Required,
			"claimed", string(canonical), digest, secret.Hash(p.Token), claimedAt, 1, p.Events, p.InvitationID, a.Workspace,
		})
		a.invitations = append(a.invitations, []any{p.InvitationID, p.ID, a.ID, hash32(), hash32(), deadline, created, a.Workspace})
	}
	return a, nil
}

func scaleInbox(i, j int) string {
	return "agent-" + strconv.Itoa(i+1) + "-" + strconv.Itoa(j+1) + "@scale.bench.example.com"
}
