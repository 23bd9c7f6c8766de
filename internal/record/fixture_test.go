package record

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// testKey derives a fixed Ed25519 key from a public label. These are TEST
// KEYS for the conformance vectors and documentation examples only: anyone
// can derive them, so anything they sign proves nothing.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("consensus-md TEST KEY, never use for anything real: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

const testIssuer = "https://consensus.example"

// member is a roster entry of a scenario; key is "" for a participant
// that bound no key, unclaimed marks a slot never claimed, and added is
// the revision that added the participant (0 or 1: the first).
type member struct {
	name      string
	kind      string
	required  bool
	key       string
	unclaimed bool
	added     int
}

// act is one event of a scenario: who (roster index), what and when
// (seconds after the lock), on the revision in force. An act with amend
// set posts nothing: it locks the next revision at that moment.
type act struct {
	who    int
	action string
	body   string
	at     int
	amend  *amendment
}

// amendment is what a scenario's next revision changes: a new objective
// (the terms change) or not, a deadline moved by some seconds, and the
// members it adds (those whose added is the new revision's number).
type amendment struct {
	objective    string
	deadlineMove int
	rule         *room.Rule
}

// scenario is a room from lock to record.
type scenario struct {
	name, description string
	members           []member
	acts              []act
	// issuedAfter is when the record is issued, in seconds after the lock.
	issuedAfter int
	// rule is revision 1's decision rule (the zero value: unanimity).
	rule room.Rule
	// v2: keyed members sign room-command/v2, bound to each event's
	// Idempotency-Key, as since that version; otherwise room-command/v1,
	// as before it.
	v2 bool
	// evidence, by event index, is the reply evidence of events recorded
	// from a reply email.
	evidence map[int]Evidence
}

var lockedAt = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// fixedID returns a stable UUID for a label.
func fixedID(label string) string {
	s := sha256.Sum256([]byte(label))
	s[6] = s[6]&0x0f | 0x40
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// build plays the scenario as the service would and returns the unsigned
// record input and the CONSENSUS.md bytes when reached.
func (sc scenario) build(t testing.TB) (Input, []byte) {
	t.Helper()
	agreement := fixedID(sc.name + "/agreement")
	rev := room.Revision{
		Schema: testIssuer + "/schemas/agreement/v1", AgreementID: agreement, Revision: 1,
		Title: "Release window <v2> & rollback (" + sc.name + ")", Objective: "Agree on Tuesday 10:00 UTC for the release; Zoë runs the rollback drill 🚀.",
		Rules: []string{"Weekdays only", "Rollback plan \"B\" stays ready\u2028for an hour"}, DecisionRule: sc.rule,
		Deadline: "2026-09-04T12:00:00Z", LockedAt: "2026-09-01T12:00:00Z", Issuer: testIssuer,
	}
	slots := make([]Slot, len(sc.members))
	participants := make([]room.Participant, len(sc.members))
	for i, m := range sc.members {
		id := fixedID(fmt.Sprintf("%s/participant/%d", sc.name, i))
		participants[i] = room.Participant{ParticipantID: id, DisplayName: m.name, Kind: m.kind, Required: m.required}
		if m.added <= 1 {
			rev.Participants = append(rev.Participants, participants[i])
		}
		slots[i] = Slot{ParticipantID: id, InvitationID: fixedID(fmt.Sprintf("%s/invitation/%d", sc.name, i))}
		if !m.unclaimed {
			slots[i].BindingDigest = canon.Digest([]byte("binding of " + id))
		}
		if m.key != "" {
			k := jwk.FromPublic(testKey(m.key).Public().(ed25519.PublicKey))
			slots[i].PublicKey = &k
		}
	}
	locked, err := room.Lock(rev)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{IssuedAt: lockedAt.Add(time.Duration(sc.issuedAfter) * time.Second), Slots: slots}
	lockedRevs := []room.Locked{locked}
	prev := canon.ZeroHash
	var devents []room.Event
	for i, a := range sc.acts {
		if a.amend != nil {
			locked = sc.amend(t, locked, a, participants)
			lockedRevs = append(lockedRevs, locked)
			continue
		}
		s, n := slots[a.who], locked.Revision.Revision
		cmd := room.Command{Schema: testIssuer + "/schemas/room-command/v1", Version: 1, AgreementID: agreement, InvitationID: s.InvitationID,
			ParticipantID: s.ParticipantID, Revision: n, RevisionDigest: locked.RevisionDigest, Action: a.action, Body: a.body}
		key := fmt.Sprintf("idem-%04d", i)
		if sc.v2 && sc.members[a.who].key != "" {
			cmd = cmd.Signed(testIssuer, key)
		}
		msg, digest, err := canon.DigestOf(cmd)
		if err != nil {
			t.Fatal(err)
		}
		e := StoredEvent{ID: fixedID(fmt.Sprintf("%s/event/%d", sc.name, i)), Seq: int64(len(in.Events) + 1), ParticipantID: s.ParticipantID, Revision: n,
			Action: a.action, Body: a.body, IdempotencyKey: key, CommandDigest: digest, CreatedAt: lockedAt.Add(time.Duration(a.at)*time.Second + 123456*time.Microsecond), Prev: prev}
		if e.Hash, err = EventHash(prev, e.Seq, digest, canon.FormatTime(e.CreatedAt)); err != nil {
			t.Fatal(err)
		}
		if k := sc.members[a.who].key; k != "" {
			e.Signature = jwk.Sign(testKey(k), msg)
		}
		if ev, ok := sc.evidence[len(in.Events)]; ok {
			b, err := canon.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			e.Evidence = string(b)
		}
		in.Events = append(in.Events, e)
		devents = append(devents, room.Event{ID: e.ID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: n, Action: e.Action, CreatedAt: e.CreatedAt,
			Evidence: e.Evidence})
		prev = e.Hash
	}
	terms := map[int]string{}
	revisions := make([]room.ArtifactRevision, len(lockedRevs))
	for i, l := range lockedRevs {
		in.Revisions = append(in.Revisions, LockedRevision{Number: i + 1, Canonical: l.Canonical, Markdown: l.Markdown,
			RevisionDigest: l.RevisionDigest, MarkdownDigest: l.MarkdownDigest, TermsDigest: l.TermsDigest})
		terms[i+1] = l.TermsDigest
		revisions[i] = room.ArtifactRevision{Number: i + 1, RevisionDigest: l.RevisionDigest, TermsDigest: l.TermsDigest,
			LockedAt: l.Revision.LockedAt, Deadline: l.Revision.Deadline}
	}
	members := make([]room.Member, len(locked.Revision.Participants))
	for i, p := range locked.Revision.Participants {
		members[i] = room.Member{ID: p.ParticipantID, Required: p.Required}
	}
	h := room.History{Current: locked.Revision.Revision, Terms: terms, Roster: members, Events: devents, Deadline: parseInstant(locked.Revision.Deadline),
		Rule: locked.Revision.DecisionRule}
	in.Outcome = h.Outcome(in.IssuedAt)
	var artifact []byte
	if in.Outcome.Status == room.StatusReached {
		standings := h.Standings()
		entries := make([]room.ArtifactEntry, len(locked.Revision.Participants))
		for i, p := range locked.Revision.Participants {
			entries[i] = room.ArtifactEntry{Participant: p}
			if st, ok := standings[p.ParticipantID]; ok && !st.Stale {
				d := st.Event
				entries[i].Decision, entries[i].EventID, entries[i].DecidedAt, entries[i].Revision = d.Action, d.ID, canon.FormatTime(d.CreatedAt), d.Revision
				reply, err := ReplyEvidence(d.Evidence)
				if err != nil {
					t.Fatal(err)
				}
				entries[i].Reply = reply
				if k := slots[slices.IndexFunc(slots, func(s Slot) bool { return s.ParticipantID == p.ParticipantID })].PublicKey; k != nil && reply == nil {
					entries[i].KeyThumbprint = k.Thumbprint() // as the service names the key of a signed decision
				}
			}
		}
		artifact = []byte(room.RenderArtifact(room.ArtifactInput{Locked: locked, Roster: entries, ChainHead: prev,
			ChainLength: int64(len(in.Events)), FinalizedAt: canon.FormatTime(in.Outcome.DecidedAt), DecidingID: in.Outcome.DecidingEventID,
			Revisions: revisions}))
		in.ArtifactSHA256 = canon.Digest(artifact)
	}
	return in, artifact
}

// amend locks the revision after prev as the act says, at its moment,
// adding the members whose added is the new revision's number.
func (sc scenario) amend(t testing.TB, prev room.Locked, a act, participants []room.Participant) room.Locked {
	t.Helper()
	n := prev.Revision.Revision + 1
	var am room.Amendment
	if a.amend.objective != "" {
		am.Objective = &a.amend.objective
	}
	am.Rule = a.amend.rule
	if a.amend.deadlineMove != 0 {
		d := parseInstant(prev.Revision.Deadline).Add(time.Duration(a.amend.deadlineMove) * time.Second)
		am.Deadline = &d
	}
	for i, m := range sc.members {
		if m.added == n {
			am.Add = append(am.Add, participants[i])
		}
	}
	next, _, err := room.Amend(prev.Revision, am, lockedAt.Add(time.Duration(a.at)*time.Second))
	if err != nil {
		t.Fatalf("%s: amend to revision %d: %v", sc.name, n, err)
	}
	l, err := room.Lock(next)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// signed builds and signs the scenario's record with the service test key.
func (sc scenario) signed(t testing.TB) (Record, []byte, []byte) {
	t.Helper()
	in, artifact := sc.build(t)
	r, err := Build(in)
	if err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	r, b, err := Sign(r, testKey(serviceKey))
	if err != nil {
		t.Fatal(err)
	}
	return r, b, artifact
}

// Key labels of the vectors.
const (
	serviceKey      = "service 2026-09"
	otherServiceKey = "service, another deployment"
)

func testKeys(labels ...string) *jwk.Set {
	s := &jwk.Set{}
	for _, l := range labels {
		s.Keys = append(s.Keys, jwk.Publish(testKey(l).Public().(ed25519.PublicKey)))
	}
	return s
}
