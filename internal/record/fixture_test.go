package record

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
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
// that bound no key, and unclaimed marks a slot never claimed.
type member struct {
	name      string
	kind      string
	required  bool
	key       string
	unclaimed bool
}

// act is one event of a scenario: who (roster index), what and when
// (seconds after the lock).
type act struct {
	who    int
	action string
	body   string
	at     int
}

// scenario is a room from lock to record.
type scenario struct {
	name, description string
	members           []member
	acts              []act
	// issuedAfter is when the record is issued, in seconds after the lock.
	issuedAfter int
}

var (
	lockedAt = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	deadline = lockedAt.Add(72 * time.Hour)
)

// fixedID returns a stable UUID for a label.
func fixedID(label string) string {
	s := sha256.Sum256([]byte(label))
	s[6] = s[6]&0x0f | 0x40
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// build plays the scenario as the service would and returns the unsigned
// record input, the CONSENSUS.md bytes when reached, and the input.
func (sc scenario) build(t testing.TB) (Input, []byte) {
	t.Helper()
	agreement := fixedID(sc.name + "/agreement")
	rev := room.Revision{
		Schema: testIssuer + "/schemas/agreement/v1", AgreementID: agreement, Revision: 1,
		Title: "Release window <v2> & rollback (" + sc.name + ")", Objective: "Agree on Tuesday 10:00 UTC for the release; Zoë runs the rollback drill 🚀.",
		Rules: []string{"Weekdays only", "Rollback plan \"B\" stays ready\u2028for an hour"}, DecisionRule: room.DecisionRule,
		Deadline: "2026-09-04T12:00:00Z", LockedAt: "2026-09-01T12:00:00Z", Issuer: testIssuer,
	}
	slots := make([]Slot, len(sc.members))
	for i, m := range sc.members {
		id := fixedID(fmt.Sprintf("%s/participant/%d", sc.name, i))
		rev.Participants = append(rev.Participants, room.Participant{ParticipantID: id, DisplayName: m.name, Kind: m.kind, Required: m.required})
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
	in := Input{IssuedAt: lockedAt.Add(time.Duration(sc.issuedAfter) * time.Second),
		Revision: LockedRevision{Number: 1, Canonical: locked.Canonical, Markdown: locked.Markdown, RevisionDigest: locked.RevisionDigest, MarkdownDigest: locked.MarkdownDigest},
		Slots:    slots}
	prev := canon.ZeroHash
	var devents []room.Event
	for i, a := range sc.acts {
		s := slots[a.who]
		cmd := room.Command{Schema: testIssuer + "/schemas/room-command/v1", Version: 1, AgreementID: agreement, InvitationID: s.InvitationID,
			ParticipantID: s.ParticipantID, Revision: 1, RevisionDigest: locked.RevisionDigest, Action: a.action, Body: a.body}
		msg, digest, err := canon.DigestOf(cmd)
		if err != nil {
			t.Fatal(err)
		}
		e := StoredEvent{ID: fixedID(fmt.Sprintf("%s/event/%d", sc.name, i)), Seq: int64(i + 1), ParticipantID: s.ParticipantID, Revision: 1,
			Action: a.action, Body: a.body, CommandDigest: digest, CreatedAt: lockedAt.Add(time.Duration(a.at)*time.Second + 123456*time.Microsecond), Prev: prev}
		if e.Hash, err = EventHash(prev, e.Seq, digest, canon.FormatTime(e.CreatedAt)); err != nil {
			t.Fatal(err)
		}
		if k := sc.members[a.who].key; k != "" {
			e.Signature = jwk.Sign(testKey(k), msg)
		}
		in.Events = append(in.Events, e)
		devents = append(devents, room.Event{ID: e.ID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: 1, Action: e.Action, CreatedAt: e.CreatedAt})
		prev = e.Hash
	}
	members := make([]room.Member, len(rev.Participants))
	for i, p := range rev.Participants {
		members[i] = room.Member{ID: p.ParticipantID, Required: p.Required}
	}
	in.Outcome = room.Evaluate(1, members, devents, deadline, in.IssuedAt)
	var artifact []byte
	if in.Outcome.Status == room.StatusReached {
		decisions := room.Decisions(1, devents)
		entries := make([]room.ArtifactEntry, len(rev.Participants))
		for i, p := range rev.Participants {
			entries[i] = room.ArtifactEntry{Participant: p}
			if d, ok := decisions[p.ParticipantID]; ok {
				entries[i].Decision, entries[i].EventID, entries[i].DecidedAt = d.Action, d.ID, canon.FormatTime(d.CreatedAt)
			}
		}
		artifact = []byte(room.RenderArtifact(room.ArtifactInput{Locked: locked, Roster: entries, ChainHead: prev,
			ChainLength: int64(len(in.Events)), FinalizedAt: canon.FormatTime(in.Outcome.DecidedAt), DecidingID: in.Outcome.DecidingEventID}))
		in.ArtifactSHA256 = canon.Digest(artifact)
	}
	return in, artifact
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
