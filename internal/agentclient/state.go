package agentclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/jwk"
)

// Record is what the runtime keeps about one claimed invitation, in
// <state>/<invitation_id>.json (0600, directory 0700). It holds the
// participant token: the file is a credential. It never holds the invite
// secret, the email proof or the session token.
type Record struct {
	InvitationID  string `json:"invitationId"`
	AgreementID   string `json:"agreementId"`
	ParticipantID string `json:"participantId"`
	DisplayName   string `json:"displayName"`
	Title         string `json:"title"`
	Inbox         string `json:"inbox"`
	Origin        string `json:"origin"`
	// Actions were built by agentroute.For(Origin, InvitationID) when the
	// invitation was claimed; later commands use them as stored.
	Actions          agentroute.URLs `json:"actions"`
	ParticipantToken string          `json:"participantToken"`
	BindingDigest    string          `json:"bindingDigest"`
	RevisionNumber   int             `json:"revisionNumber"`
	RevisionDigest   string          `json:"revisionDigest"`
	MarkdownDigest   string          `json:"markdownDigest"`
	// TermsDigest and CanonicalRevision are those of revision
	// RevisionNumber, the latest one verified; a record written before
	// revisions existed lacks them.
	TermsDigest       string          `json:"termsDigest,omitempty"`
	CanonicalRevision json.RawMessage `json:"canonicalRevision,omitempty"`
	ClaimedAt         string          `json:"claimedAt"`
	// PublicKey is the key the claim bound (participant-binding/v2); every
	// command is then signed with its private half, kept under keys/.
	PublicKey *jwk.Key `json:"publicKey,omitempty"`
	// LastRoomETag is the room version the --exec program last saw.
	LastRoomETag string `json:"lastRoomETag,omitempty"`
}

// String omits the participant token.
func (r Record) String() string {
	return fmt.Sprintf("{InvitationID:%s AgreementID:%s ParticipantID:%s Inbox:%s Origin:%s}", r.InvitationID, r.AgreementID, r.ParticipantID, r.Inbox, r.Origin)
}

// Pending is a room command persisted before it is sent, so that a retry
// after a crash sends the same Idempotency-Key and the server replays the
// stored event instead of storing a second one.
type Pending struct {
	Key     string  `json:"idempotencyKey"`
	Command Command `json:"command"`
}

// State is the runtime's directory: claimed invitations at the top level,
// commands in flight under pending/, signing keys under keys/. Both are a jsonDir (atomic, fsynced,
// 0600 files in a 0700 directory, UUID file names only).
type State struct {
	records *jsonDir
	pending *jsonDir
	// keys holds one private key per invitation claimed with --sign.
	keys *jsonDir
}

// OpenState opens or creates the state directory.
func OpenState(dir string) (*State, error) {
	records, err := openJSONDir(dir)
	if err != nil {
		return nil, err
	}
	pending, err := openJSONDir(filepath.Join(dir, "pending"))
	if err != nil {
		return nil, err
	}
	keys, err := openJSONDir(filepath.Join(dir, "keys"))
	if err != nil {
		return nil, err
	}
	return &State{records: records, pending: pending, keys: keys}, nil
}

// ErrUnknownRoom is returned for an invitation id the state has no record of.
var ErrUnknownRoom = errors.New("agent: no claimed invitation with that id in the state directory (see `consensus agent rooms`)")

// Load returns the record of a claimed invitation, or ErrUnknownRoom.
func (s *State) Load(invitationID string) (*Record, error) {
	var r Record
	if err := s.records.load(strings.ToLower(invitationID), &r); err != nil {
		if errors.Is(err, errNotRecorded) {
			return nil, ErrUnknownRoom
		}
		return nil, err
	}
	return &r, nil
}

// Save writes the record atomically.
func (s *State) Save(r *Record) error { return s.records.save(r.InvitationID, r) }

// Has reports whether the invitation was already processed.
func (s *State) Has(invitationID string) bool { return s.records.has(invitationID) }

// List returns every claimed invitation, sorted by id.
func (s *State) List() ([]*Record, error) {
	ids, err := s.records.list()
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, id := range ids {
		r, err := s.Load(id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// LoadPending returns the command in flight for the invitation, or nil.
func (s *State) LoadPending(invitationID string) (*Pending, error) {
	var p Pending
	if err := s.pending.load(invitationID, &p); err != nil {
		if errors.Is(err, errNotRecorded) {
			return nil, nil
		}
		return nil, err
	}
	return &p, nil
}

// SavePending persists p (fsynced) before it is sent.
func (s *State) SavePending(invitationID string, p *Pending) error {
	return s.pending.save(invitationID, p)
}

// ClearPending forgets the command once the server answered definitively.
func (s *State) ClearPending(invitationID string) error { return s.pending.remove(invitationID) }
