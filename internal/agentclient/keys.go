package agentclient

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// privateKey is a participant's Ed25519 key as an RFC 8037 private JWK, the
// form kept in <state>/keys/<invitation_id>.json (0600, directory 0700). It
// never leaves the state directory: the claim sends the public half and a
// proof, each event a signature.
type privateKey struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	D   string `json:"d"`
}

// String never shows the private half.
func (k privateKey) String() string { return "{Ed25519 key x=" + k.X + "}" }

// GoString never shows the private half either.
func (k privateKey) GoString() string { return k.String() }

func (k privateKey) ed25519() (ed25519.PrivateKey, error) {
	seed, err := jwk.DecodeSeed(k.D)
	if err != nil || k.Kty != jwk.KtyOKP || k.Crv != jwk.CrvEd {
		return nil, errors.New("agent: state: the stored key is not an Ed25519 private JWK")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	if jwk.FromPrivate(priv).X != k.X {
		return nil, errors.New("agent: state: the stored key's x does not match its d")
	}
	return priv, nil
}

// ParticipantKey returns the invitation's signing key, creating it on first
// use. Creation is exclusive, so two runs on one state directory never bind
// different keys for one invitation: the loser loads the winner's key.
func (s *State) ParticipantKey(invitationID string) (ed25519.PrivateKey, error) {
	var k privateKey
	err := s.keys.load(invitationID, &k)
	if errors.Is(err, errNotRecorded) {
		seed := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(seed); err != nil {
			return nil, err
		}
		priv := ed25519.NewKeyFromSeed(seed)
		k = privateKey{Kty: jwk.KtyOKP, Crv: jwk.CrvEd, X: jwk.FromPrivate(priv).X, D: jwk.EncodeSignature(seed)}
		if err = s.keys.create(invitationID, k); errors.Is(err, errAlreadyRecorded) {
			err = s.keys.load(invitationID, &k)
		}
	}
	if err != nil {
		return nil, err
	}
	return k.ed25519()
}

// storedKey loads the invitation's signing key; unlike ParticipantKey it
// never creates one (a missing key is an error, not a new identity).
func (s *State) storedKey(invitationID string) (ed25519.PrivateKey, error) {
	var k privateKey
	if err := s.keys.load(invitationID, &k); err != nil {
		if errors.Is(err, errNotRecorded) {
			return nil, errors.New("agent: state: the signing key of this invitation is missing from keys/; its commands cannot be signed")
		}
		return nil, err
	}
	return k.ed25519()
}

// keyedBinding is the participant-binding/v2 the claim will make, built
// from what the exchange said, and the keyProof over its canonical bytes.
// The server must answer with the same digest.
func keyedBinding(origin string, x *Exchanged, inbox, runtimeEndpoint string, priv ed25519.PrivateKey) (pub jwk.Key, proof, digest string, err error) {
	var endpoint *string
	if runtimeEndpoint != "" {
		endpoint = &runtimeEndpoint
	}
	revDigest, err := canon.ParseDigest(x.RevisionDigest)
	if err != nil {
		return jwk.Key{}, "", "", err
	}
	inbox, err = room.NormalizeInbox("inbox", inbox)
	if err != nil {
		return jwk.Key{}, "", "", err
	}
	pub = jwk.FromPrivate(priv)
	b := room.Binding{
		AgreementID: x.AgreementID, InvitationID: x.InvitationID, ParticipantID: x.Participant.ParticipantID, Inbox: inbox,
		RuntimeEndpoint: endpoint, Revision: x.RevisionNumber, RevisionDigest: revDigest,
	}.WithKey(fmt.Sprintf(room.BindingV2SchemaFmt, origin), pub)
	msg, digest, err := canon.DigestOf(b)
	if err != nil {
		return jwk.Key{}, "", "", err
	}
	return pub, jwk.Sign(priv, msg), digest, nil
}

// commandSignature signs the room-command/v2 object the server will build
// from cmd, posted under the Idempotency-Key key, for this participant: the
// value of Consensus-Signature. Binding the key makes the signature speak
// for that one event.
func commandSignature(rec *Record, key string, cmd Command, priv ed25519.PrivateKey) (string, error) {
	revDigest, err := canon.ParseDigest(cmd.Digest)
	if err != nil {
		return "", err
	}
	msg, err := canon.Marshal(room.Command{
		AgreementID: rec.AgreementID, InvitationID: rec.InvitationID, ParticipantID: rec.ParticipantID,
		Revision: cmd.Revision, RevisionDigest: revDigest, Action: cmd.Action, Body: cmd.Body,
	}.Signed(rec.Origin, key))
	if err != nil {
		return "", err
	}
	return jwk.Sign(priv, msg), nil
}
