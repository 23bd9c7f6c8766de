package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
)

// The scale load (BENCH_SCALE=1) writes rooms straight into the service's
// own tables with COPY, as if the service had made them: every row meets
// the constraints, foreign keys and row-level security of the migrations,
// the counters an append reads (head, version, event counts) agree with the
// events, and each event carries the command digest and chain hash the
// service would have computed. The rooms are spread over a few workspaces,
// the bench's own (default) among them.
//
// This file holds the spec and the generated rows' types; a room's rows
// are made in scalegen.go (their canonical bytes in scalecanon.go), written
// in scaleload.go; the scale phase and its report are in scalerun.go.

// defaultWorkspace is the workspace the bootstrap operator token acts in:
// the bench's own rooms are made there.
var defaultWorkspace = uuid.MustParse("00000000-0000-0000-0000-000000000001")

// scaleSpec describes one scale load.
type scaleSpec struct {
	Agreements int
	Parts      int // participants per agreement, all claimed
	Events     int // events per agreement, spread over its participants
	Workspaces int // the default one and Workspaces-1 more
	// Origin is the service origin the revisions, bindings and commands
	// name, as the service writes its own.
	Origin string
	// TokenKey is the service's CONSENSUS_TOKEN_KEY: participant tokens
	// are derived from it as a claim derives them, so a replayed claim
	// would answer the same token.
	TokenKey []byte
	Seed     uint64
	Workers  int // parallel COPY connections
	Chunk    int // agreements per transaction
	Now      time.Time
}

// fullScale is the scale of BENCH_SCALE=1: 100,000 agreements, 300,000
// participants, 1,000,000 events.
func fullScale(agreements int) scaleSpec {
	return scaleSpec{Agreements: agreements, Parts: 3, Events: 10, Workspaces: 4, Seed: 1, Workers: 2, Chunk: 500}
}

func (s scaleSpec) rows() int64 {
	// agreements, revisions, participants, invitations, events
	return int64(s.Agreements) * int64(2+2*s.Parts+s.Events)
}

// scaleParticipant is one generated participant, as a test needs it.
type scaleParticipant struct {
	ID, InvitationID uuid.UUID
	Token            string
	Events           int
	Binding          room.Binding
	BindingJSON      string
}

// scaleEvent is one generated event.
type scaleEvent struct {
	ID            uuid.UUID
	Seq           int64
	Participant   int
	Action, Body  string
	Key           string
	CommandDigest string
	CreatedAt     time.Time
	Prev, Hash    string
}

// scaleAgreement is one generated room with its rows.
type scaleAgreement struct {
	Index          int
	ID             uuid.UUID
	Workspace      uuid.UUID
	RevisionDigest string
	Parts          []scaleParticipant
	Events         []scaleEvent
	agreement      []any
	revision       []any
	participants   [][]any
	invitations    [][]any
	events         [][]any
}

// workspaceID is the id of scale workspace w; workspace 0 is the default.
func (s scaleSpec) workspaceID(w int) uuid.UUID {
	if w == 0 {
		return defaultWorkspace
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], s.Seed)
	binary.BigEndian.PutUint64(b[8:], uint64(w))
	sum := sha256.Sum256(append([]byte("consensus-bench scale workspace"), b[:]...))
	id, _ := uuid.FromBytes(sum[:16])
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// scaleSummary is the one-line description of a spec for logs and the report.
func (s scaleSpec) summary() string {
	return strings.Join([]string{
		thousands(float64(s.Agreements)) + " agreements",
		thousands(float64(s.Agreements*s.Parts)) + " participants (all claimed)",
		thousands(float64(s.Agreements*s.Events)) + " events",
		fmt.Sprintf("%d workspaces", s.Workspaces),
	}, ", ")
}
